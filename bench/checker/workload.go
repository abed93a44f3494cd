package checker

import (
	"cmp"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/schemas"
)

// BodyMarker starts every message body the checker generates: a test that
// reads logs looks for it to prove no body was logged.
const BodyMarker = "chk-secret-body-"

// Config shapes a workload. Zero values take the defaults.
type Config struct {
	// Seed makes the workload repeatable.
	Seed int64
	// Users are the users with devices.
	Users int
	// DevicesPerUser is the most devices one user runs (each user gets 1
	// to DevicesPerUser).
	DevicesPerUser int
	// Directs, Groups: direct conversations and small groups among Users.
	Directs int
	Groups  int
	// GroupSize is the founding member count of a small group.
	GroupSize int
	// LargeGroupSize, when above 0, adds one group of that many members
	// (users without devices fill it up): above the large-group threshold
	// it has no per-member inbox writes.
	LargeGroupSize int
	// Messages produced to Kafka by the load generator.
	Messages int
	// APIMessages sent by devices through POST /v1/messages.
	APIMessages int
	// Percentages of messages that mention someone, that are sent again
	// with the same client_msg_id, and that are QoS 0 (never stored).
	MentionPercent int
	ResendPercent  int
	QoS0Percent    int
	// Joins and Leaves are membership changes of small groups mid-stream.
	Joins  int
	Leaves int
	// Poison records (undecodable bytes) put in the middle of the stream.
	Poison int
	// BodyBytes is the size of each body.
	BodyBytes int
	// Namespace starts every user and conversation id, so that several
	// workloads played one after another on one system do not share
	// conversations (empty: none).
	Namespace string
}

// Defaults of Config.
const (
	DefaultUsers          = 24
	DefaultDevicesPerUser = 2
	DefaultDirects        = 16
	DefaultGroups         = 6
	DefaultGroupSize      = 8
	DefaultMessages       = 2000
	DefaultBodyBytes      = 120
)

func (c Config) withDefaults() Config {
	c.Users = cmp.Or(c.Users, DefaultUsers)
	c.DevicesPerUser = cmp.Or(c.DevicesPerUser, DefaultDevicesPerUser)
	c.Directs = cmp.Or(c.Directs, DefaultDirects)
	c.Groups = cmp.Or(c.Groups, DefaultGroups)
	c.GroupSize = cmp.Or(c.GroupSize, DefaultGroupSize)
	c.Messages = cmp.Or(c.Messages, DefaultMessages)
	c.BodyBytes = cmp.Or(c.BodyBytes, DefaultBodyBytes)
	return c
}

// Validate names the first field out of range.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.Users < 3:
		return fmt.Errorf("checker: Users %d is below 3", c.Users)
	case c.DevicesPerUser < 1 || c.DevicesPerUser > redisstore.DefaultMaxDevices:
		return fmt.Errorf("checker: DevicesPerUser %d is outside 1..%d", c.DevicesPerUser, redisstore.DefaultMaxDevices)
	case c.GroupSize < 3 || c.GroupSize > c.Users:
		return fmt.Errorf("checker: GroupSize %d is outside 3..Users", c.GroupSize)
	case c.LargeGroupSize != 0 && c.LargeGroupSize <= redisstore.DefaultLargeGroupThreshold:
		return fmt.Errorf("checker: LargeGroupSize %d is not above the large-group threshold %d", c.LargeGroupSize, redisstore.DefaultLargeGroupThreshold)
	case c.Directs < 1 || c.Groups < 1 || c.Messages < 1:
		return fmt.Errorf("checker: Directs, Groups and Messages must be at least 1")
	case c.BodyBytes < len(BodyMarker)+16 || c.BodyBytes > schemas.DefaultMaxBodyBytes:
		return fmt.Errorf("checker: BodyBytes %d is outside %d..%d", c.BodyBytes, len(BodyMarker)+16, schemas.DefaultMaxBodyBytes)
	case c.MentionPercent < 0 || c.ResendPercent < 0 || c.QoS0Percent < 0 || c.Joins < 0 || c.Leaves < 0 || c.Poison < 0 || c.APIMessages < 0:
		return fmt.Errorf("checker: counts and percentages must not be negative")
	}
	return nil
}

// Item is one record the load generator produces to im.messages.
type Item struct {
	// Msg is the message; nil for a poison record.
	Msg *schemas.Message
	// Raw is a poison record's value; Key its partition key.
	Raw []byte
	Key string
	// Resend: the same client_msg_id was produced before.
	Resend bool
}

// Device is one simulated device of a user.
type Device struct {
	User, ID string
}

// Workload is a generated set of conversations, records and devices.
type Workload struct {
	Config Config
	// Setup is produced (and handled) before traffic: the founding joins.
	Setup []Item
	// Stream is produced while devices run, in order.
	Stream []Item
	// API is what each user's devices send through the API.
	API     map[string][]*schemas.Message
	Devices []Device
	// Convs lists every conversation id.
	Convs []string
}

// gen is the state of one generation.
type gen struct {
	cfg     Config
	rng     *rand.Rand
	users   []string
	members map[string][]string // current members of each group
	founder map[string]string   // group → creator (never leaves)
	directs [][2]string         // peers of each direct conversation
	groups  []string
	large   string
	n       int
	w       *Workload
}

// Generate builds a repeatable workload.
func Generate(cfg Config) (*Workload, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	g := &gen{cfg: cfg, rng: rand.New(rand.NewPCG(uint64(cfg.Seed), 0xc4ec4e7)),
		members: map[string][]string{}, founder: map[string]string{},
		w: &Workload{Config: cfg, API: map[string][]*schemas.Message{}}}
	g.population()
	g.stream()
	g.apiMessages()
	return g.w, nil
}

// userID names active users; every fifth id is not ASCII, as ids may be
// any UTF-8 without the key separators.
func userID(i int) string {
	if i%5 == 4 {
		return fmt.Sprintf("usér-%03d-名", i)
	}
	return fmt.Sprintf("u%03d", i)
}

func (g *gen) population() {
	for i := range g.cfg.Users {
		u := g.cfg.Namespace + userID(i)
		g.users = append(g.users, u)
		for d := range 1 + g.rng.IntN(g.cfg.DevicesPerUser) {
			g.w.Devices = append(g.w.Devices, Device{User: u, ID: fmt.Sprintf("dev%d", d+1)})
		}
	}
	for i := range g.cfg.Directs {
		a := g.rng.IntN(len(g.users))
		b := (a + 1 + g.rng.IntN(len(g.users)-1)) % len(g.users)
		g.directs = append(g.directs, [2]string{g.users[a], g.users[b]})
		g.w.Convs = append(g.w.Convs, g.directID(i))
	}
	for i := range g.cfg.Groups {
		conv := g.cfg.Namespace + fmt.Sprintf("grp-%02d", i)
		if i == 1 {
			conv = g.cfg.Namespace + "grüppe-会话-01"
		}
		founders := g.pick(g.users, g.cfg.GroupSize)
		g.foundGroup(conv, founders)
		g.groups = append(g.groups, conv)
	}
	if g.cfg.LargeGroupSize > 0 {
		g.large = g.cfg.Namespace + "large-00"
		founders := g.pick(g.users, min(len(g.users), 12))
		for i := len(founders); i < g.cfg.LargeGroupSize; i++ {
			founders = append(founders, g.cfg.Namespace+fmt.Sprintf("silent-%05d", i))
		}
		g.foundGroup(g.large, founders)
	}
}

func (g *gen) directID(i int) string { return g.cfg.Namespace + fmt.Sprintf("dm-%03d", i) }

func (g *gen) foundGroup(conv string, founders []string) {
	g.members[conv] = slices.Clone(founders)
	g.founder[conv] = founders[0]
	g.w.Convs = append(g.w.Convs, conv)
	g.w.Setup = append(g.w.Setup, Item{Msg: &schemas.Message{ClientMsgId: g.id(), ConvId: conv,
		ConvType: schemas.ConvType_CONV_TYPE_GROUP, Kind: schemas.Kind_KIND_MEMBER_JOIN,
		Sender: founders[0], Recipients: founders}})
}

// pick returns n distinct elements of from, in random order.
func (g *gen) pick(from []string, n int) []string {
	idx := g.rng.Perm(len(from))[:n]
	out := make([]string, n)
	for i, j := range idx {
		out[i] = from[j]
	}
	return out
}

func (g *gen) id() string {
	g.n++
	return fmt.Sprintf("%scm-%d-%06d", g.cfg.Namespace, g.cfg.Seed, g.n)
}

func (g *gen) body() []byte {
	var r [8]byte
	for i := range r {
		r[i] = byte(g.rng.IntN(256))
	}
	b := []byte(BodyMarker + hex.EncodeToString(r[:]) + " ")
	for len(b) < g.cfg.BodyBytes {
		b = append(b, "lorem ipsum 你好 "[g.rng.IntN(12)])
	}
	return b[:g.cfg.BodyBytes]
}
