package api

import (
	"encoding/json"
	"net/http"
	"testing"
)

func TestUnknownPathsAndWrongMethodsAnswerInTheJSONErrorFormat(t *testing.T) {
	e := newEnv(t, envOptions{})
	ann := e.token("ann", "phone")
	cases := []struct {
		name, method, path, token string
		status                    int
		code, allow               string
	}{
		{"unknown path", "GET", "/v1/nothing", ann, http.StatusNotFound, "not_found", ""},
		{"unknown path without a token", "POST", "/v2/sync", "", http.StatusNotFound, "not_found", ""},
		{"root", "GET", "/", "", http.StatusNotFound, "not_found", ""},
		{"a conversation path past its routes", "GET", "/v1/conversations/g/other", ann, http.StatusNotFound, "not_found", ""},
		{"GET of a POST route", "GET", "/v1/sync", ann, http.StatusMethodNotAllowed, "method_not_allowed", "POST"},
		{"DELETE of a GET route", "DELETE", "/v1/conversations", ann, http.StatusMethodNotAllowed, "method_not_allowed", "GET, HEAD"},
		{"PUT of a wildcard route", "PUT", "/v1/conversations/g/messages", ann, http.StatusMethodNotAllowed, "method_not_allowed", "GET, HEAD"},
		{"POST of health", "POST", "/healthz", "", http.StatusMethodNotAllowed, "method_not_allowed", "GET, HEAD"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := e.request(tc.method, tc.path, tc.token, `{}`)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var er tError
			if err := json.NewDecoder(resp.Body).Decode(&er); err != nil {
				t.Fatalf("answer is not JSON: %v", err)
			}
			if resp.StatusCode != tc.status || er.Error.Code != tc.code || er.Error.Message == "" ||
				resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get("Allow") != tc.allow {
				t.Fatalf("%d %+v (Allow %q), want %d %s (Allow %q)", resp.StatusCode, er, resp.Header.Get("Allow"), tc.status, tc.code, tc.allow)
			}
		})
	}
}
