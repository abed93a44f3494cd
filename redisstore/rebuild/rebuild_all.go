package rebuild

import (
	"context"
	"errors"
	"fmt"
)

// ConversationLister pages through the conversations a history holds, in
// ascending id order: the ids after `after` ("" : from the first), at most
// limit.
type ConversationLister interface {
	Conversations(ctx context.Context, after string, limit int) ([]string, error)
}

// rebuildListPage is how many conversation ids one listing asks for.
const rebuildListPage = 1000

// RebuildAll rebuilds every conversation the history holds (see
// Rebuild), one at a time, and hands each outcome to report.
// A conversation whose rebuild is refused (the history is behind, it was
// written meanwhile, the history holds nothing of it) is reported and
// passed over; any other error stops the run and is returned. It returns
// how many conversations were rebuilt.
func (s *Rebuilder) RebuildAll(ctx context.Context, list ConversationLister, src HistorySource, opt Options, report func(Result, error)) (int, error) {
	if err := opt.validate(); err != nil {
		return 0, err
	}
	opt = opt.withDefaults() // one Now for the whole run
	done := 0
	for after := ""; ; {
		page, err := list.Conversations(ctx, after, rebuildListPage)
		if err != nil {
			return done, fmt.Errorf("rebuild all: list conversations after %q: %w", after, err)
		}
		for _, conv := range page {
			res, err := s.Rebuild(ctx, src, conv, opt)
			if report != nil {
				report(res, err)
			}
			switch {
			case err == nil:
				done++
			case errors.Is(err, ErrHistoryBehind), errors.Is(err, ErrRaced), errors.Is(err, ErrNoHistory):
			default:
				return done, err
			}
		}
		if len(page) < rebuildListPage {
			return done, nil
		}
		after = page[len(page)-1]
	}
}
