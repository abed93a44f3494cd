package schemas

import "testing"

func TestEveryEnumValueHasANameThatParsesBack(t *testing.T) {
	for v := range ConvType_name {
		name := ConvTypeName(ConvType(v))
		if got, ok := ParseConvType(name); name == "" || !ok || got != ConvType(v) {
			t.Errorf("conv type %d: name %q parses to %v %v", v, name, got, ok)
		}
	}
	for v := range Kind_name {
		name := KindName(Kind(v))
		if got, ok := ParseKind(name); name == "" || !ok || got != Kind(v) {
			t.Errorf("kind %d: name %q parses to %v %v", v, name, got, ok)
		}
	}
	for v := range QoS_name {
		name := QoSName(QoS(v))
		if got, ok := ParseQoS(name); name == "" || !ok || got != QoS(v) {
			t.Errorf("qos %d: name %q parses to %v %v", v, name, got, ok)
		}
	}
	for v := range Role_name {
		name := RoleName(Role(v))
		if got, ok := ParseRole(name); name == "" || !ok || got != Role(v) {
			t.Errorf("role %d: name %q parses to %v %v", v, name, got, ok)
		}
	}
	for v := range Authority_name {
		name := AuthorityName(Authority(v))
		if got, ok := ParseAuthority(name); name == "" || !ok || got != Authority(v) {
			t.Errorf("authority %d: name %q parses to %v %v", v, name, got, ok)
		}
	}
	if ConvTypeName(ConvType(99)) != "" || KindName(Kind(99)) != "" || QoSName(QoS(99)) != "" ||
		RoleName(Role(99)) != "" || AuthorityName(Authority(99)) != "" {
		t.Error("an unknown value has a name")
	}
	if _, ok := ParseKind("bogus"); ok {
		t.Error("an unknown name parses")
	}
}
