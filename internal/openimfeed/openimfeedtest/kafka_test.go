package openimfeedtest

import (
	"context"
	"testing"
)

// TestProducerPartitionsAsSarama checks that Producer puts each key in the partition sarama
// v1.43.0's default hash partitioner (the one OpenIM configures) computes, including a key
// whose FNV-1a hash is math.MinInt32 as an int32 (sarama's TestHashPartitionerMinInt32 key).
func TestProducerPartitionsAsSarama(t *testing.T) {
	// Expected partitions worked out by hand from int32(fnv32a(key)) % 50, negated if negative:
	// fnv32a("1468509572224") = 0x80000000 → -2147483648 % 50 = -48 → 48.
	if got := SaramaHashPartition("1468509572224", 50); got != 48 {
		t.Fatalf("SaramaHashPartition(MinInt32 key, 50) = %d, want 48", got)
	}
	brokers := StartKafka(t, KafkaOptions{Partitions: 50})
	producer := NewProducer(t, ProducerOptions{Brokers: brokers})
	keys := []string{"1468509572224", "g1", "alice_bob", "3412587960", "u1_u2", "a", "bob_carol"}
	seen := map[int32]bool{}
	for _, key := range keys {
		p := producer.ProduceRaw(context.Background(), key, []byte("v"), Headers{OperationID: "op"})
		if want := SaramaHashPartition(key, 50); p.Partition != want {
			t.Errorf("key %q went to partition %d, sarama's hash partitioner picks %d", key, p.Partition, want)
		}
		seen[p.Partition] = true
	}
	if len(seen) < 3 {
		t.Errorf("%d keys landed in only %d partitions; the partitioner is not hashing keys", len(keys), len(seen))
	}
}
