package openimfeed

import (
	"crypto/tls"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
)

func TestOpenRefusesOpenIMGroupsAndNoBrokers(t *testing.T) {
	if _, err := Open(Options{}); err == nil {
		t.Errorf("Open without brokers succeeded")
	}
	for _, group := range []string{"redis", "mongo", "push", "offlinePush"} {
		f, err := Open(Options{Brokers: []string{"127.0.0.1:9092"}, Group: group})
		if err == nil {
			f.Close()
			t.Errorf("Open in OpenIM's consumer group %q succeeded; OpenIM would lose records to msggate", group)
		} else if !strings.Contains(err.Error(), group) {
			t.Errorf("Open(group %q) error %q does not name the group", group, err)
		}
	}
}

// TestClientOptions checks what Open hands the Kafka client: defaults, SASL/PLAIN with
// kafka.yml's credentials, the TLS config, and manual commits.
func TestClientOptions(t *testing.T) {
	tlsConfig := &tls.Config{ServerName: "kafka.example"}
	f, err := Open(Options{Brokers: []string{"k1:9092", "k2:9092"}, Username: "openim", Password: "s3cret", TLS: tlsConfig})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got := f.client.OptValue(kgo.ConsumerGroup); got != DefaultGroup {
		t.Errorf("group %v, want %q", got, DefaultGroup)
	}
	if got, _ := f.client.OptValue(kgo.ConsumeTopics).([]string); len(got) != 1 || got[0] != "toPush" {
		t.Errorf("topics %v, want [toPush]", f.client.OptValue(kgo.ConsumeTopics))
	}
	if got, _ := f.client.OptValue(kgo.SeedBrokers).([]string); strings.Join(got, ",") != "k1:9092,k2:9092" {
		t.Errorf("seed brokers %v", f.client.OptValue(kgo.SeedBrokers))
	}
	if got := f.client.OptValue(kgo.DisableAutoCommit); got != true {
		t.Errorf("autocommit not disabled (%v): offsets would be committed before apply", got)
	}
	if got := f.client.OptValue(kgo.BlockRebalanceOnPoll); got != true {
		t.Errorf("BlockRebalanceOnPoll %v, want true", got)
	}
	mechs, _ := f.client.OptValue(kgo.SASL).([]sasl.Mechanism)
	if len(mechs) != 1 || mechs[0].Name() != "PLAIN" {
		t.Fatalf("SASL mechanism %v, want PLAIN", f.client.OptValue(kgo.SASL))
	}
	_, first, err := mechs[0].Authenticate(t.Context(), "k1:9092")
	if err != nil {
		t.Fatal(err)
	}
	if string(first) != "\x00openim\x00s3cret" {
		t.Errorf("SASL/PLAIN message %q, want user openim, password s3cret", first)
	}
	// A new group starts at the newest record, as OpenIM's push group does.
	if got, _ := f.client.OptValue(kgo.ConsumeResetOffset).(kgo.Offset); got.EpochOffset() != kgo.NewOffset().AtEnd().EpochOffset() {
		t.Errorf("reset offset %v, want the end of each partition", got.EpochOffset())
	}
	if got := f.client.OptValue(kgo.DialTLSConfig); got != tlsConfig {
		t.Errorf("TLS config %v, want the one given", got)
	}

	plain, err := Open(Options{Brokers: []string{"k1:9092"}, Topic: "toPushCustom", Group: "msggate-2", StartAtOldest: true})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if got, _ := plain.client.OptValue(kgo.SASL).([]sasl.Mechanism); len(got) != 0 {
		t.Errorf("SASL %v without username and password", got)
	}
	if got, _ := plain.client.OptValue(kgo.DialTLSConfig).(*tls.Config); got != nil {
		t.Errorf("TLS %v when Options.TLS is nil", got)
	}
	if got := plain.client.OptValue(kgo.ConsumerGroup); got != "msggate-2" {
		t.Errorf("group %v, want msggate-2", got)
	}
	if got, _ := plain.client.OptValue(kgo.ConsumeResetOffset).(kgo.Offset); got.EpochOffset() != kgo.NewOffset().AtStart().EpochOffset() {
		t.Errorf("reset offset with StartAtOldest %v, want the start of each partition", got.EpochOffset())
	}
	if got, _ := plain.client.OptValue(kgo.ConsumeTopics).([]string); len(got) != 1 || got[0] != "toPushCustom" {
		t.Errorf("topics %v, want [toPushCustom]", plain.client.OptValue(kgo.ConsumeTopics))
	}
}
