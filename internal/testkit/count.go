package testkit

import "io"

// CountingReader counts the bytes a reader under test took from R: the fuzz targets of the
// frame and ClientHello readers check that a reader never consumes past what it parsed.
type CountingReader struct {
	R io.Reader
	N int
}

func (c *CountingReader) Read(p []byte) (int, error) {
	n, err := c.R.Read(p)
	c.N += n
	return n, err
}
