package dashboard

import (
	_ "embed"
	"net/http"
)

// openAPIDoc describes the JSON API (OpenAPI 3.1), served at
// GET /api/openapi.json. TestOpenAPI checks real responses against it and
// that every /api route is in it: change both together.
//
//go:embed openapi.json
var openAPIDoc []byte

func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_, _ = w.Write(openAPIDoc)
}
