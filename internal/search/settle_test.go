package search_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/msggate/msggate/internal/search"
)

// recorder is an engine that keeps what it was given; it answers no search.
type recorder struct {
	search.Engine
	applied [][]search.Change
}

func (r *recorder) Apply(_ context.Context, changes []search.Change) error {
	r.applied = append(r.applied, append([]search.Change(nil), changes...))
	return nil
}

func put(seq int64, text string, hiddenFor ...string) search.Change {
	return search.Change{Put: &search.Doc{Key: search.Key{ConversationID: "c", Seq: seq}, Text: text, HiddenFor: hiddenFor}}
}

func remove(seq int64) search.Change {
	return search.Change{Remove: &search.Key{ConversationID: "c", Seq: seq}}
}

// Ensure Settle writes again only the keys whose store state moved after they were read, reads
// again until none moves, and gives up with ErrUnsettled after SettleRounds writes instead of
// looping or leaving it silently.
func TestSettleWritesAgainWhatMoved(t *testing.T) {
	ctx := context.Background()
	store := map[int64]search.Change{1: put(1, "one"), 2: remove(2), 3: put(3, "three")}
	reads := 0
	reread := func(_ context.Context, keys []search.Key) ([]search.Change, error) {
		reads++
		if reads == 1 {
			store[1] = remove(1)              // revoked since it was read
			store[3] = put(3, "three", "bob") // deleted for bob since
		}
		out := make([]search.Change, len(keys))
		for i, k := range keys {
			out[i] = store[k.Seq]
		}
		return out, nil
	}
	e := &recorder{}
	if err := search.Settle(ctx, e, []search.Change{put(1, "one"), remove(2), put(3, "three")}, reread); err != nil {
		t.Fatal(err)
	}
	if len(e.applied) != 2 || len(e.applied[1]) != 2 || !e.applied[1][0].Equal(remove(1)) || !e.applied[1][1].Equal(put(3, "three", "bob")) {
		t.Errorf("applied %v, want the batch and then seq 1's remove and seq 3's put hidden for bob", e.applied)
	}

	e = &recorder{}
	n := 0
	always := func(_ context.Context, keys []search.Key) ([]search.Change, error) {
		n++
		return []search.Change{put(1, string(rune('a'+n)))}, nil
	}
	err := search.Settle(ctx, e, []search.Change{put(1, "a")}, always)
	if !errors.Is(err, search.ErrUnsettled) || len(e.applied) != search.SettleRounds {
		t.Errorf("a key that never settles: %v after %d writes, want ErrUnsettled after %d", err, len(e.applied), search.SettleRounds)
	}
}

// Ensure Change.Equal tells apart two Puts that differ in any field of Doc, so a field added
// to Doc later cannot be left out of the comparison unnoticed.
func TestChangeEqualSeesEveryDocField(t *testing.T) {
	base := search.Doc{Key: search.Key{ConversationID: "c", Seq: 1}, SenderID: "alice", ContentType: 101,
		SendTime: 1000, Text: "hello", HiddenFor: []string{"bob"}}
	if !(search.Change{Put: &base}).Equal(search.Change{Put: &search.Doc{Key: base.Key, SenderID: "alice",
		ContentType: 101, SendTime: 1000, Text: "hello", HiddenFor: []string{"bob"}}}) {
		t.Fatal("equal docs compare unequal")
	}
	var walk func(v reflect.Value, path string)
	walk = func(v reflect.Value, path string) {
		for i := range v.NumField() {
			f, name := v.Field(i), path+v.Type().Field(i).Name
			if f.Kind() == reflect.Struct {
				walk(f, name+".")
				continue
			}
			d := base
			d.HiddenFor = []string{"bob"}
			dv := reflect.ValueOf(&d).Elem().FieldByName(name[len(path):])
			if path != "" {
				dv = reflect.ValueOf(&d).Elem().FieldByName(path[:len(path)-1]).FieldByName(name[len(path):])
			}
			switch dv.Kind() {
			case reflect.String:
				dv.SetString(dv.String() + "x")
			case reflect.Int32, reflect.Int64:
				dv.SetInt(dv.Int() + 1)
			case reflect.Slice:
				dv.Set(reflect.ValueOf([]string{"bob", "carol"}))
			default:
				t.Fatalf("Doc.%s: a %s this test does not vary", name, dv.Kind())
			}
			if (search.Change{Put: &base}).Equal(search.Change{Put: &d}) {
				t.Errorf("docs differing in %s compare equal", name)
			}
		}
	}
	walk(reflect.ValueOf(base), "")
	k := base.Key
	if (search.Change{Put: &base}).Equal(search.Change{Remove: &k}) || (search.Change{Remove: &k}).Equal(search.Change{Put: &base}) {
		t.Error("a Put and a Remove of one key compare equal")
	}
}
