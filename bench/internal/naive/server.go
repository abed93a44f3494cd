package naive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Server serves pulls of the flat inbox over HTTP on 127.0.0.1, so that the
// baseline pays for encoding and transfer like the API does.
type Server struct {
	URL  string
	srv  *http.Server
	done chan struct{}
}

// Serve starts GET /pull?user=U&after=N answering the Box as JSON.
func Serve(f *Flat) (*Server, error) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /pull", func(w http.ResponseWriter, r *http.Request) {
		after, err := strconv.ParseInt(r.URL.Query().Get("after"), 10, 64)
		if err != nil || after < 0 {
			http.Error(w, "after: not a seq", http.StatusBadRequest)
			return
		}
		box, err := f.Pull(r.Context(), r.URL.Query().Get("user"), after)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(box)
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen for the flat inbox: %w", err)
	}
	s := &Server{URL: "http://" + l.Addr().String(), srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second},
		done: make(chan struct{})}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Printf("flat inbox server: %v\n", err)
		}
	}()
	return s, nil
}

// Pull fetches one box as a client: it returns the box and its size.
func (s *Server) Pull(ctx context.Context, user string, after int64) (*Box, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet,
		s.URL+"/pull?user="+url.QueryEscape(user)+"&after="+strconv.FormatInt(after, 10), nil)
	if err != nil {
		return nil, 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("flat pull: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, len(data), fmt.Errorf("flat pull: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, len(data), fmt.Errorf("flat pull: status %d: %s", resp.StatusCode, data)
	}
	var box Box
	if err := json.Unmarshal(data, &box); err != nil {
		return nil, len(data), fmt.Errorf("flat pull: decode: %w", err)
	}
	return &box, len(data), nil
}

// Stop shuts the server down.
func (s *Server) Stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
	<-s.done
}
