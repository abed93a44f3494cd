package rebuild

import (
	"context"
	"fmt"
	"github.com/offlinebox/offlinebox/redisstore"
)

// TagSource is a history that also keeps conversations' tags
// (chstore.Store): a rebuild then restores the tag retention policies
// select by.
type TagSource interface {
	ConvTags(ctx context.Context, convs []string) (map[string]string, error)
}

// restoreTag sets the conversation's tag from src when src keeps tags and
// the meta has none (a meta that survived keeps its own, which is as new
// as any the history holds; a record sequenced since wins too).
func (s *Rebuilder) restoreTag(ctx context.Context, src HistorySource, conv string) error {
	ts, ok := src.(TagSource)
	if !ok {
		return nil
	}
	tags, err := ts.ConvTags(ctx, []string{conv})
	if err != nil {
		return fmt.Errorf("rebuild %s: read its tag: %w", conv, err)
	}
	if tags[conv] == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	if err := s.rdb.HSetNX(ctx, s.keys.ConvMeta(conv), redisstore.MetaTag, tags[conv]).Err(); err != nil {
		return fmt.Errorf("rebuild %s: restore its tag: %w", conv, err)
	}
	return nil
}
