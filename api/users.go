package api

import (
	"context"
	"net/http"

	"github.com/offlinebox/offlinebox/edge"
	"github.com/offlinebox/offlinebox/redisstore"
)

// deviceOf picks the device of a request (edge.DeviceOf).
var deviceOf = edge.DeviceOf

// contextWithCallTimeout bounds one store call made directly by a handler.
func contextWithCallTimeout(r *http.Request, st *redisstore.Store) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), st.Config().CallTimeout)
}
