// Package linksafe creates, measures, locks and deletes the node's run and work directories
// without ever following a link a run may have planted there (S3): everything works relative
// to directory descriptors opened with O_NOFOLLOW. anetd uses it to expire work dirs,
// anet-sandboxd to make each run's dirs and to remove them.
package linksafe
