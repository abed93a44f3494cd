package live

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/offlinebox/offlinebox/auth"
	"github.com/offlinebox/offlinebox/edge"
)

// The upgrade of GET /v1/live: the token (header, subprotocol or auth
// frame), the connection's place in the node's bounds (admission.go),
// then the connection's life (handler.go).

var errLiveUserFull = &edge.Error{Status: http.StatusTooManyRequests, Code: "too_many_connections",
	Msg: "this user holds as many live connections on this node as it may; close one (each device needs one)"}

var errLiveFull = &edge.Error{Status: http.StatusServiceUnavailable, Code: "live_full",
	Msg: "this node holds as many live connections as it may; retry another node or later"}

var errLiveAddressFull = &edge.Error{Status: http.StatusTooManyRequests, Code: "too_many_unauthenticated",
	Msg: "this address holds as many live connections waiting for their auth frame as it may; authenticate those first"}

// serveLive answers GET /v1/live: it upgrades to a WebSocket, registers the
// device's presence, sends hello and the pull-before notice, then reads
// the client's frames until the connection ends. The connection takes its
// place in the node's bounds (liveAdmission) before it is upgraded and
// keeps it until it ends.
func (h *liveHub) serveLive(w http.ResponseWriter, r *http.Request) (int, int) {
	tok, terr := auth.FromRequest(r)
	if terr != nil {
		tok = subprotocolToken(r)
	}
	var id auth.Identity
	if tok == "" && !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		w.Header().Set("WWW-Authenticate", `Bearer realm="offlinebox"`)
		return h.writeError(w, edge.ErrUnauthorized)
	}
	var dev string
	if tok != "" {
		var err error
		if id, err = h.deps.Tokens.Verify(r.Context(), tok); err != nil {
			h.refused(refusalOf(err))
			e := edge.TokenRefusal(err)
			if e.Status == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="offlinebox"`)
			}
			return h.writeError(w, e)
		}
		if dev, err = edge.DeviceOf(id, r.URL.Query().Get("device_id"), "device_id", true); err != nil {
			return h.writeError(w, h.classify(r, err))
		}
		if err = h.deps.Tokens.DeviceRevoked(r.Context(), id, dev); err != nil {
			h.refused(refusalOf(err))
			e := edge.TokenRefusal(err)
			if e.Status == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="offlinebox"`)
			}
			return h.writeError(w, e)
		}
	}
	t, reason := h.admission.enter(remoteHost(r.RemoteAddr), id.User, dev)
	if reason != "" {
		h.refused(reason)
		w.Header().Set("Retry-After", strconv.Itoa(int(h.deps.RetryAfter/time.Second)))
		return h.writeError(w, map[string]*edge.Error{RefusedNodeFull: errLiveFull, RefusedAddressFull: errLiveAddressFull,
			RefusedUserFull: errLiveUserFull}[reason])
	}
	if err := h.start(); err != nil {
		t.release()
		h.refused(RefusedStoreDown)
		h.log.Warn("live channel cannot subscribe", "err", err)
		return h.writeError(w, &edge.Error{Status: http.StatusServiceUnavailable, Code: "unavailable", Msg: "the live bus is down; retry later"})
	}
	bw := &smallBuffers{ResponseWriter: w, writeTimeout: h.cfg.WriteTimeout}
	ws, err := websocket.Accept(bw, r, &websocket.AcceptOptions{Subprotocols: []string{LiveSubprotocol},
		CompressionMode: websocket.CompressionDisabled, OriginPatterns: h.cfg.OriginPatterns})
	if err != nil {
		t.release()
		return http.StatusBadRequest, 0
	}
	ws.SetReadLimit(h.cfg.ReadLimit)
	// The connection lives on a goroutine of its own, started with a
	// small stack: this one, deep in the HTTP server, returns (the
	// connection is hijacked), so an idle connection costs one small
	// goroutine, not the request'h.
	h.running.Add(1)
	go h.liveConnection(ws, bw.cork, t, tok, id, r.URL.Query().Get("device_id"))
	return http.StatusSwitchingProtocols, 0
}

// liveConnection runs one upgraded connection; its ticket is bound to its
// user and device already when a header or subprotocol brought the
// token, else once its auth frame came.
func (h *liveHub) liveConnection(ws *websocket.Conn, cork *corkConn, t *liveTicket, tok string, id auth.Identity, named string) {
	defer h.running.Done()
	defer t.release()
	// Every call of a connection is made on this goroutine and waited
	// for, so a context of the connection's own would cancel nothing; the
	// hub's ends them at shutdown, and an idle connection keeps no
	// context (nor its parent's entry for it, nor its Done channel).
	ctx := h.ctx
	if tok == "" {
		var err error
		if id, err = h.authFrame(ctx, ws); err != nil {
			reason := refusalOf(err)
			h.refused(reason)
			code, text := CloseUnauthorized, "a valid token is required: header, subprotocol bearer.TOKEN or an auth frame"
			if reason == RefusedRevoked {
				code, text = CloseRevoked, "this token was revoked; sign in again"
			}
			_ = ws.Close(code, text)
			return
		}
	}
	dev, err := edge.DeviceOf(id, named, "device_id", true)
	if err != nil {
		_ = ws.Close(CloseUnauthorized, "a device is required: a token with a device claim or ?device_id=")
		return
	}
	if tok == "" {
		if err := h.deps.Tokens.DeviceRevoked(ctx, id, dev); err != nil {
			h.refused(refusalOf(err))
			_ = ws.Close(CloseRevoked, "this token was revoked; sign in again")
			return
		}
	}
	if !t.bound {
		if reason := t.bind(id.User, dev); reason != "" {
			h.refused(reason)
			_ = ws.Close(CloseUserFull, "this user holds as many live connections on this node as it may; close one")
			return
		}
	}
	h.runLive(ctx, ws, cork, id, dev)
}

// subprotocolToken takes a token offered as subprotocol "bearer.TOKEN"
// (browsers cannot set headers on a WebSocket).
func subprotocolToken(r *http.Request) string {
	for _, h := range r.Header.Values("Sec-WebSocket-Protocol") {
		for _, p := range strings.Split(h, ",") {
			if p = strings.TrimSpace(p); strings.HasPrefix(p, "bearer.") {
				return strings.TrimPrefix(p, "bearer.")
			}
		}
	}
	return ""
}

// authFrame waits for {"type":"auth","token":...}.
func (h *liveHub) authFrame(ctx context.Context, ws *websocket.Conn) (auth.Identity, error) {
	ctx, cancel := context.WithTimeout(ctx, h.cfg.AuthTimeout)
	defer cancel()
	_, data, err := ws.Read(ctx)
	if err != nil {
		return auth.Identity{}, err
	}
	var f clientFrame
	if aerr := h.deps.Decode(data, &f, ""); aerr != nil || f.Type != "auth" {
		return auth.Identity{}, errors.New("the first frame is not an auth frame")
	}
	return h.deps.Tokens.Verify(ctx, f.Token)
}
