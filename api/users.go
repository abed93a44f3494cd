package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/offlinebox/offlinebox/auth"
	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
)

// withUser runs f with the store holding user's keys. When the user was
// moved to the hot store after the router last looked, f fails with
// ErrUserMoved (no stale copy is read or written); the router is then
// refreshed and f runs once more.
func (s *Server) withUser(ctx context.Context, user string, f func(users *redisstore.Store) error) error {
	if err := s.router.Refresh(ctx, false); err != nil {
		return fmt.Errorf("route %s: %w", user, err)
	}
	err := f(s.router.For(user))
	if !errors.Is(err, redisstore.ErrUserMoved) {
		return err
	}
	if err := s.router.Refresh(ctx, true); err != nil {
		return fmt.Errorf("route %s: %w", user, err)
	}
	return f(s.router.For(user))
}

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
