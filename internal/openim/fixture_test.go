package openim_test

import (
	"encoding/json"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/msggate/msggate/internal/openim/openimtest"
)

// The fixture writes the shapes OpenIM v3.8.3 writes (see openimtest for the OpenIM function
// each write repeats); this pins the ones the adapter depends on, as FerretDB stores them.
func TestFixtureWritesOpenIMsShapes(t *testing.T) {
	t.Parallel()
	d := newDeployment(t)
	chat := openimtest.SingleConversationID("a", "b")
	d.Send(chat, openimtest.Single("a", "b", openimtest.ContentText, openimtest.TextContent("1")),
		openimtest.Single("a", "b", openimtest.ContentText, openimtest.TextContent("2")))
	d.DeleteForEveryone(chat, 2)
	d.PersistReadSeq(chat, "b", 1)

	var chunk bson.Raw
	if err := d.DB.Collection("msg").FindOne(ctx, bson.D{{Key: "doc_id", Value: chat + ":0"}}).Decode(&chunk); err != nil {
		t.Fatal(err)
	}
	slots, _ := chunk.Lookup("msgs").Array().Values()
	if len(slots) != 100 {
		t.Fatalf("a chunk has %d slots, want 100", len(slots))
	}
	shape := func(v bson.RawValue) string {
		elems, _ := v.Document().Elements()
		var parts []string
		for _, e := range elems {
			parts = append(parts, e.Key()+":"+e.Value().Type.String())
		}
		return strings.Join(parts, ",")
	}
	if got := shape(slots[2]); got != "msg:null,revoke:null,del_list:array,is_read:boolean" {
		t.Errorf("empty slot %s", got)
	}
	if got := shape(slots[1]); got != "msg:null" {
		t.Errorf("slot deleted for everyone %s", got)
	}
	msg := slots[0].Document().Lookup("msg").Document()
	for key, typ := range map[string]bson.Type{"seq": bson.TypeInt64, "send_time": bson.TypeInt64, "session_type": bson.TypeInt32,
		"content_type": bson.TypeInt32, "status": bson.TypeInt32, "offline_push": bson.TypeNull, "at_user_id_list": bson.TypeNull} {
		if got := msg.Lookup(key).Type; got != typ {
			t.Errorf("msg.%s is %s, want %s", key, got, typ)
		}
	}

	var seqDoc, seqUser bson.Raw
	if err := d.DB.Collection("seq").FindOne(ctx, bson.D{{Key: "conversation_id", Value: chat}}).Decode(&seqDoc); err != nil {
		t.Fatal(err)
	}
	if seqDoc.Lookup("max_seq").Type != bson.TypeInt64 || seqDoc.Lookup("max_seq").Int64() != 52 || seqDoc.Lookup("min_seq").Type != bson.TypeInt64 {
		t.Errorf("seq document %s, want max_seq int64 52 (a 50+2 block)", seqDoc)
	}
	if err := d.DB.Collection("seq_user").FindOne(ctx, bson.D{{Key: "user_id", Value: "b"}}).Decode(&seqUser); err != nil {
		t.Fatal(err)
	}
	if seqUser.Lookup("read_seq").Type != bson.TypeInt64 || seqUser.Lookup("min_seq").Type != bson.TypeInt32 || seqUser.Lookup("max_seq").Type != bson.TypeInt32 {
		t.Errorf("seq_user document %s, want read_seq int64 and the $setOnInsert zeros int32", seqUser)
	}

	cur, err := d.DB.Collection("seq").Indexes().List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var idx []bson.M
	if err := cur.All(ctx, &idx); err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, ix := range idx {
		if ix["name"] == "conversation_id_1" {
			found = true
			if u, _ := ix["unique"].(bool); u {
				t.Error("seq.conversation_id_1 is unique; OpenIM's is not")
			}
		}
	}
	if !found {
		t.Errorf("seq indexes %v lack conversation_id_1", idx)
	}

	cached, err := d.Redis.HGetAll(ctx, openimtest.MsgCacheKey(chat, 1)).Result()
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]json.RawMessage
	if err := json.Unmarshal([]byte(cached["value"]), &v); err != nil || len(cached) != 1 {
		t.Fatalf("MSG_CACHE hash %v", cached)
	}
	if _, ok := v["Msg"]; !ok || !strings.Contains(string(v["Msg"]), `"SendID":"a"`) || string(v["DelList"]) != "null" {
		t.Errorf("MSG_CACHE value %s, want Go field names", cached["value"])
	}
	tagged, _ := d.Redis.HGetAll(ctx, openimtest.MsgCacheKey(chat, 2)).Result()
	if tagged["lockUntil"] != "0" || tagged["value"] == "" {
		t.Errorf("a tagged MSG_CACHE hash %v, want its value with lockUntil 0", tagged)
	}
	if m, _ := d.Redis.HGetAll(ctx, "MALLOC_SEQ:"+chat).Result(); m["CURR"] != "2" || m["LAST"] != "52" || m["TIME"] == "" {
		t.Errorf("MALLOC_SEQ %v", m)
	}
}
