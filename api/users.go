package api

import (
	"context"
	"net/http"

	"github.com/offlinebox/offlinebox/auth"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
)

// deviceOf picks the device of a request: the token's when it is pinned to
// one (a request naming another is refused), else the one named.
func deviceOf(id auth.Identity, named, field string, required bool) (string, error) {
	switch {
	case id.Device != "" && named != "" && named != id.Device:
		return "", forbidden("the token is for device %q, not %q", id.Device, named)
	case id.Device != "":
		return id.Device, nil
	case named == "" && !required:
		return "", nil
	case named == "":
		return "", badRequest(field, "is required (or use a token with a device claim)")
	}
	if err := schemas.ValidID(field, named); err != nil {
		return "", invalidField("", err)
	}
	return named, nil
}

// contextWithCallTimeout bounds one store call made directly by a handler.
func contextWithCallTimeout(r *http.Request, st *redisstore.Store) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), st.Config().CallTimeout)
}
