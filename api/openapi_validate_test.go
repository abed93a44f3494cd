package api

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// openAPISpec is openapi.yaml loaded and validated by kin-openapi, and a
// router over its paths, shared by the tests of this binary.
var openAPISpec = sync.OnceValues(func() (routers.Router, error) {
	doc, err := openapi3.NewLoader().LoadFromFile("openapi.yaml")
	if err != nil {
		return nil, err
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, err
	}
	// Match paths whatever the test server's address.
	doc.Servers = nil
	return legacy.NewRouter(doc)
})

func TestOpenAPISpecIsValidAndNamesEveryOperation(t *testing.T) {
	if _, err := openAPISpec(); err != nil {
		t.Fatalf("openapi.yaml is not a valid OpenAPI document: %v", err)
	}
	doc, err := openapi3.NewLoader().LoadFromFile("openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			where := method + " " + path
			if op.OperationID == "" {
				t.Errorf("%s has no operationId", where)
			} else if other, dup := seen[op.OperationID]; dup {
				t.Errorf("%s and %s share operationId %s", where, other, op.OperationID)
			}
			seen[op.OperationID] = where
		}
	}
}

// validatingHandler serves h and checks every answer against openapi.yaml:
// its status is documented for the route, and its body and headers match
// the documented response. A request the spec has no route for (the 404
// and 405 of unrouted paths, documented in prose) is not checked, and a
// connection upgrade (a WebSocket) is passed through untouched.
// recorderOver records an answer while http.ResponseController still
// reaches the connection beneath (the body deadline of admission needs it).
type recorderOver struct {
	*httptest.ResponseRecorder
	conn http.ResponseWriter
}

func (r recorderOver) Unwrap() http.ResponseWriter { return r.conn }

func validatingHandler(t testing.TB, h http.Handler) http.Handler {
	router, err := openAPISpec()
	if err != nil {
		t.Fatalf("load openapi.yaml: %v", err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "" {
			h.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(recorderOver{rec, w}, r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())

		route, params, err := router.FindRoute(r)
		if err != nil {
			return
		}
		opts := &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true,
			AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}
		in := &openapi3filter.ResponseValidationInput{
			RequestValidationInput: &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route, Options: opts},
			Status:                 rec.Code, Header: rec.Header(), Options: opts,
		}
		body, err := decodedAnswer(rec.Header().Get("Content-Encoding"), rec.Body.Bytes())
		if err != nil {
			t.Errorf("%s %s answered %d in %q that does not decode: %v", r.Method, r.URL.Path, rec.Code, rec.Header().Get("Content-Encoding"), err)
			return
		}
		in.SetBodyBytes(body)
		if err := openapi3filter.ValidateResponse(r.Context(), in); err != nil {
			t.Errorf("%s %s answered %d, which openapi.yaml does not allow: %s\nbody: %s",
				r.Method, r.URL.Path, rec.Code, strings.ReplaceAll(err.Error(), "\n", "\n  "), bytes.TrimSpace(body))
		}
	})
}

// decodedAnswer undoes an answer's content coding.
func decodedAnswer(coding string, data []byte) ([]byte, error) {
	switch coding {
	case "":
		return data, nil
	case "zstd":
		d, err := zstd.NewReader(nil)
		if err != nil {
			return nil, err
		}
		defer d.Close()
		return d.DecodeAll(data, nil)
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, err
		}
		return io.ReadAll(zr)
	}
	return nil, fmt.Errorf("unknown content coding %q", coding)
}
