package main

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// compacted is what CompactedTopic (sluice-test-support) produced in partition 0 of a topic: updates over keys keys
// and deleted keys deleted, each offset's key and value a function of the offset. From offset updates/2 on, 2*deleted
// records delete keys: d<j> with value "doomed", then d<j> with a null value (a tombstone). Every other offset o has
// value v<o> and 400 x's, and key k<o % keys> before the deletions, k<o % (keys/2)> after them.
type compacted struct {
	updates, keys, deleted int64
}

var padding = strings.Repeat("x", 400)

func (c compacted) records() int64 {
	return c.updates + 2*c.deleted
}

func (c compacted) key(offset int64) string {
	deletion := offset - c.updates/2
	switch {
	case deletion < 0:
		return fmt.Sprintf("k%d", offset%c.keys)
	case deletion < 2*c.deleted:
		return fmt.Sprintf("d%d", deletion/2)
	default:
		return fmt.Sprintf("k%d", offset%(c.keys/2))
	}
}

// value is the value of the record at offset, nil for a tombstone.
func (c compacted) value(offset int64) *string {
	deletion := offset - c.updates/2
	var value string
	switch {
	case deletion >= 0 && deletion < 2*c.deleted && deletion%2 == 1:
		return nil
	case deletion >= 0 && deletion < 2*c.deleted:
		value = "doomed"
	default:
		value = fmt.Sprintf("v%d%s", offset, padding)
	}
	return &value
}

// latest is each key's latest offset.
func (c compacted) latest() map[string]int64 {
	latest := make(map[string]int64, c.keys+c.deleted)
	for offset := range c.records() {
		latest[c.key(offset)] = offset
	}
	return latest
}

// read is a record as read: its offset, key and value (nil for a null value).
type read struct {
	offset int64
	key    string
	value  *string
}

// checkCompacted reads partition 0 of the topic from its start to its end and checks it got there (no stall at a
// gap the cleaner left), that its offsets only increase, that each record is the one produced at its offset, that
// each key's last record is its latest (a deleted key's a tombstone, a nil value), and that it read fewer than a
// quarter of the records produced.
func checkCompacted(bootstrap, topic string, produced compacted) error {
	ends, err := endOffsets(bootstrap, topic, kgo.ReadUncommitted(), 1)
	if err != nil {
		return err
	}
	if ends[0] != produced.records() {
		return fmt.Errorf("the end offset of %s is %d, not %d", topic, ends[0], produced.records())
	}
	got, err := readPartition(bootstrap, topic, ends[0])
	if err != nil {
		return err
	}
	logf("at the end %d of %s", ends[0], topic)
	if len(got) == 0 {
		return fmt.Errorf("no record read")
	}
	for i := 1; i < len(got); i++ {
		if got[i].offset <= got[i-1].offset {
			return fmt.Errorf("offset %d read after %d", got[i].offset, got[i-1].offset)
		}
	}
	if last := got[len(got)-1].offset; last != produced.records()-1 {
		return fmt.Errorf("the last record read is at %d, not at the end %d", last, produced.records()-1)
	}
	last := make(map[string]int64, len(got))
	tombstones := 0
	for _, r := range got {
		key, value := produced.key(r.offset), produced.value(r.offset)
		if r.key != key || !sameValue(r.value, value) {
			return fmt.Errorf("offset %d read as %s=%.20s, produced as %s=%.20s", r.offset, r.key, show(r.value),
				key, show(value))
		}
		last[r.key] = r.offset
		if r.value == nil {
			tombstones++
		}
	}
	latest := produced.latest()
	if !maps.Equal(last, latest) {
		var wrong []string
		for key, offset := range latest {
			if at, ok := last[key]; !ok || at != offset {
				wrong = append(wrong, fmt.Sprintf("%s: last read at %d (read: %v), latest %d", key, at, ok, offset))
			}
		}
		return fmt.Errorf("keys whose last record read is not their latest: %s", sample(wrong))
	}
	if int64(len(got))*4 >= produced.records() {
		return fmt.Errorf("%d records read of the %d produced: not compacted", len(got), produced.records())
	}
	logf("read %d of the %d records produced, offsets %d to %d, each as produced, each of the %d keys' latest, %d"+
		" tombstones", len(got), produced.records(), got[0].offset, got[len(got)-1].offset, len(latest), tombstones)
	return nil
}

// readPartition reads partition 0 of the topic from its start until it has seen the record before end.
func readPartition(bootstrap, topic string, end int64) ([]read, error) {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(bootstrap),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(200*time.Millisecond),
	)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), phaseTimeout)
	defer cancel()
	var got []read
	next := int64(0) // the offset after the last record seen
	for next < end {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("read to %d in %v: only to %d, %d records read", end, phaseTimeout, next,
				len(got))
		}
		if err := fetchErrors(fetches); err != nil {
			return nil, err
		}
		for _, r := range fetches.Records() {
			if r.Offset >= end {
				return nil, fmt.Errorf("record at %d, past the end %d", r.Offset, end)
			}
			var value *string
			if r.Value != nil {
				text := string(r.Value)
				value = &text
			}
			got = append(got, read{r.Offset, string(r.Key), value})
			next = r.Offset + 1
		}
	}
	return got, nil
}

func sameValue(a, b *string) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

func show(value *string) string {
	if value == nil {
		return "null"
	}
	return *value
}
