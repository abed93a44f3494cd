package api

import (
	"net/http"
	"strconv"

	"github.com/offlinebox/offlinebox/auth"
	"github.com/offlinebox/offlinebox/redisstore"
)

// rejectionsJSON answers GET /v1/rejections.
type rejectionsJSON struct {
	Rejections []rejectionJSON `json:"rejections"`
}

type rejectionJSON struct {
	ConvID      string `json:"conv_id"`
	ClientMsgID string `json:"client_msg_id"`
	Reason      string `json:"reason"`
	AtMS        int64  `json:"at_ms"`
}

// rejections answers GET /v1/rejections?since_ms=N: the user's records the
// pipeline refused for good at or after N, oldest first. A live device is
// told as it happens (the rejected frame); this is how a device that was
// away learns why a message it sent never came back with a seq. The list
// is bounded (redisstore.MaxRejectionsPer, RejectionsKept), so one answer
// holds it whole.
func (s *Server) rejections(r *http.Request, id auth.Identity) (int, any, error) {
	q := r.URL.Query()
	if err := onlyParams(q, "since_ms"); err != nil {
		return 0, nil, err
	}
	var since int64
	if v := q.Get("since_ms"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return 0, nil, badRequest("since_ms", "must be a time in ms since the epoch, 0 or above")
		}
		since = n
	}
	list, err := s.router.Main().Rejections(r.Context(), id.User, since)
	if err != nil {
		return 0, nil, err
	}
	out := rejectionsJSON{Rejections: make([]rejectionJSON, len(list))}
	for i, rj := range list {
		out.Rejections[i] = rejectionOf(rj)
	}
	return http.StatusOK, out, nil
}

func rejectionOf(r redisstore.Rejection) rejectionJSON {
	return rejectionJSON{ConvID: r.Conv, ClientMsgID: r.ClientMsgID, Reason: r.Reason, AtMS: r.AtMS}
}
