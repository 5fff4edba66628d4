package openimtest

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Snapshot is everything in the deployment: each collection's indexes and documents (as
// canonical extended JSON, so BSON types are compared too) and each Redis key's type, content
// and remaining TTL.
type Snapshot struct {
	Collections map[string][]string // name -> index specs, then documents
	Keys        map[string]string   // key -> type and content
	TTLs        map[string]time.Duration
}

// Snapshot reads the whole deployment.
func (d *Deployment) Snapshot() Snapshot {
	d.t.Helper()
	ctx := context.Background()
	s := Snapshot{Collections: map[string][]string{}, Keys: map[string]string{}, TTLs: map[string]time.Duration{}}
	names, err := d.DB.ListCollectionNames(ctx, bson.D{})
	d.check(err, "list collections")
	for _, name := range names {
		var entries []string
		cur, err := d.DB.Collection(name).Indexes().List(ctx)
		d.check(err, "list indexes")
		var specs []bson.Raw
		d.check(cur.All(ctx, &specs), "read indexes")
		for _, spec := range specs {
			entries = append(entries, "index "+canonical(spec))
		}
		cur, err = d.DB.Collection(name).Find(ctx, bson.D{})
		d.check(err, "read "+name)
		var docs []bson.Raw
		d.check(cur.All(ctx, &docs), "read "+name)
		for _, doc := range docs {
			entries = append(entries, "doc "+canonical(doc))
		}
		sort.Strings(entries)
		s.Collections[name] = entries
	}
	var cursor uint64
	for {
		keys, next, err := d.Redis.Scan(ctx, cursor, "*", 1000).Result()
		d.check(err, "scan keys")
		for _, k := range keys {
			typ, err := d.Redis.Type(ctx, k).Result()
			d.check(err, "type")
			content := typ
			switch typ {
			case "hash":
				m, err := d.Redis.HGetAll(ctx, k).Result()
				d.check(err, "hgetall")
				var fields []string
				for f, v := range m {
					fields = append(fields, f+"="+v)
				}
				sort.Strings(fields)
				content += " " + strings.Join(fields, " ")
			case "string":
				v, err := d.Redis.Get(ctx, k).Result()
				d.check(err, "get")
				content += " " + v
			default:
				content += " (not compared)"
			}
			s.Keys[k] = content
			ttl, err := d.Redis.PTTL(ctx, k).Result()
			d.check(err, "pttl")
			s.TTLs[k] = ttl
		}
		cursor = next
		if cursor == 0 {
			break
		}
	}
	return s
}

func canonical(doc bson.Raw) string {
	b, err := bson.MarshalExtJSON(doc, true, false)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return string(b)
}

// Diff lists what differs between two snapshots: collections, indexes, documents, keys and
// their contents, and any TTL that grew (a read that refreshes a TTL writes too). TTLs that
// only ran down, and keys that expired in between, are not differences.
func Diff(before, after Snapshot) []string {
	var out []string
	for name, a := range after.Collections {
		b, ok := before.Collections[name]
		if !ok {
			out = append(out, "collection created: "+name)
			continue
		}
		if strings.Join(a, "\n") != strings.Join(b, "\n") {
			out = append(out, "collection changed: "+name)
		}
	}
	for name := range before.Collections {
		if _, ok := after.Collections[name]; !ok {
			out = append(out, "collection dropped: "+name)
		}
	}
	for k, a := range after.Keys {
		b, ok := before.Keys[k]
		switch {
		case !ok:
			out = append(out, "key created: "+k)
		case a != b:
			out = append(out, "key changed: "+k)
		case after.TTLs[k] > before.TTLs[k] && before.TTLs[k] >= 0:
			out = append(out, "key TTL refreshed: "+k)
		case before.TTLs[k] < 0 && after.TTLs[k] >= 0:
			out = append(out, "key TTL set: "+k)
		}
	}
	sort.Strings(out)
	return out
}
