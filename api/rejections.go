package api

import (
	"github.com/offlinebox/offlinebox/wire"
	"math"
	"net/http"

	"github.com/offlinebox/offlinebox/auth"
)

// rejectionsJSON answers GET /v1/rejections.
type rejectionsJSON struct {
	Rejections []wire.Rejection `json:"rejections"`
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
	since, err := intParam(q.Get("since_ms"), "since_ms", 0, 0, math.MaxInt)
	if err != nil {
		return 0, nil, err
	}
	list, err := s.router.Main().Rejections(r.Context(), id.User, int64(since))
	if err != nil {
		return 0, nil, err
	}
	out := rejectionsJSON{Rejections: make([]wire.Rejection, len(list))}
	for i, rj := range list {
		out.Rejections[i] = wire.Rejection{ConvID: rj.Conv, ClientMsgID: rj.ClientMsgID, Code: rj.Code, Reason: rj.Reason, AtMS: rj.AtMS}
	}
	return http.StatusOK, out, nil
}
