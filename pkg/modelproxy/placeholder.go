package modelproxy

import (
	"crypto/subtle"
	"net/http"
	"strings"
)

// CarriesPlaceholder reports whether h carries the run's placeholder ph as an API key
// (x-api-key, or Authorization: Bearer), compared in constant time. It is the one check of a
// model request's token: the proxy runs it on every request, and the endpoint runs it first
// on every request when it listens where other local processes can reach it (M1).
func CarriesPlaceholder(h http.Header, ph []byte) bool {
	ok := false
	for _, v := range h.Values("X-Api-Key") {
		ok = subtle.ConstantTimeCompare([]byte(strings.TrimSpace(v)), ph) == 1 || ok
	}
	for _, v := range h.Values("Authorization") {
		if len(v) > 7 && strings.EqualFold(v[:7], "bearer ") {
			ok = subtle.ConstantTimeCompare([]byte(strings.TrimSpace(v[7:])), ph) == 1 || ok
		}
	}
	return ok
}
