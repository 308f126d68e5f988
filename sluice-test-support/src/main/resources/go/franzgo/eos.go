package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// recordsPerTransaction is the most input records one consume-transform-produce transaction takes, so that a run
// has several transactions to commit and abort.
const recordsPerTransaction = 30

func checkExactlyOnce(bootstrap, input, output, group string, records int) error {
	last, inputs, err := writeInput(bootstrap, input, records)
	if err != nil {
		return err
	}
	done, err := transform(bootstrap, input, output, group, inputs)
	if err != nil {
		return err
	}
	want := make([]string, 0, len(inputs))
	for _, value := range inputs {
		want = append(want, "out-"+value)
	}
	if err := expectRead(bootstrap, output, kgo.ReadCommitted(), want, "read_committed"); err != nil {
		return err
	}
	everything, err := readToEnd(bootstrap, output, kgo.ReadUncommitted())
	if err != nil {
		return fmt.Errorf("read_uncommitted of %s: %w", output, err)
	}
	if len(everything) <= len(want) {
		return fmt.Errorf("read_uncommitted of %s: %d records, but %d transactions were aborted after their"+
			" records were flushed, so more than the %d committed should be there", output, len(everything),
			done.aborted, len(want))
	}
	logf("read_uncommitted of %s: %d records (the aborted transactions' too)", output, len(everything))
	return expectGroupPast(bootstrap, group, input, last)
}

// writeInput commits the input records in transactions of recordsPerTransaction (one of them aborted midway, with
// values that the transform must never see) and returns the offset of the last input record on each partition and
// the input values committed.
func writeInput(bootstrap, input string, records int) (map[int32]int64, []string, error) {
	ctx := context.Background()
	producer, err := transactionalProducer(bootstrap, "franzgo-input-"+input)
	if err != nil {
		return nil, nil, err
	}
	defer producer.Close()
	last := make(map[int32]int64, partitions)
	var inputs []string
	for t := 0; len(inputs) < records; t++ {
		var values []string
		commit := t != 1
		for i := 0; i < recordsPerTransaction && (!commit || len(inputs)+len(values) < records); i++ {
			if commit {
				values = append(values, fmt.Sprintf("in-%04d", len(inputs)+i))
			} else {
				values = append(values, fmt.Sprintf("aborted-%04d", i))
			}
		}
		where, err := produceTransaction(ctx, producer, input, values, commit)
		if err != nil {
			return nil, nil, fmt.Errorf("input transaction %d: %w", t, err)
		}
		if !commit {
			continue
		}
		inputs = append(inputs, values...)
		for _, w := range where {
			last[w.partition] = max(last[w.partition], w.offset)
		}
	}
	logf("input %s: %d records committed, one transaction of %d aborted", input, len(inputs), recordsPerTransaction)
	return last, inputs, nil
}

// outcome counts a transform's transactions.
type outcome struct {
	committed, aborted int
}

// transform runs the consume-transform-produce loop in a GroupTransactSession until every input value was
// transformed in a committed transaction, aborting every third transaction on purpose. It fails on an input seen
// that was never committed, and on an input committed twice.
func transform(bootstrap, input, output, group string, inputs []string) (outcome, error) {
	session, err := kgo.NewGroupTransactSession(
		kgo.SeedBrokers(bootstrap),
		kgo.TransactionalID("franzgo-eos-"+group),
		kgo.TransactionTimeout(60*time.Second),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(input),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequireStableFetchOffsets(),
		kgo.FetchMaxWait(200*time.Millisecond),
		kgo.SessionTimeout(10*time.Second),
	)
	if err != nil {
		return outcome{}, err
	}
	defer session.Close()

	wanted := make(map[string]bool, len(inputs))
	for _, value := range inputs {
		wanted[value] = true
	}
	transformed := make(map[string]bool, len(inputs))
	var counts outcome
	deadline := time.Now().Add(phaseTimeout)
	for len(transformed) < len(inputs) {
		if time.Now().After(deadline) {
			return counts, fmt.Errorf("transformed %d of %d inputs in %v (%d transactions committed, %d aborted)",
				len(transformed), len(inputs), phaseTimeout, counts.committed, counts.aborted)
		}
		pollContext, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		fetches := session.PollRecords(pollContext, recordsPerTransaction)
		cancel()
		if err := fetchErrors(fetches); err != nil && !onlyDeadline(fetches) {
			return counts, err
		}
		if fetches.NumRecords() == 0 {
			continue
		}
		abort := (counts.committed+counts.aborted)%3 == 1
		values, err := transformOnce(session, output, fetches, wanted, abort)
		if err != nil {
			return counts, err
		}
		committed, err := session.End(context.Background(), kgo.TransactionEndTry(!abort))
		if err != nil {
			return counts, fmt.Errorf("end a transaction of %d records (commit %v): %w", len(values), !abort, err)
		}
		if !committed {
			counts.aborted++
			continue
		}
		if abort {
			return counts, errors.New("a transaction ended with an abort says it committed")
		}
		counts.committed++
		for _, value := range values {
			if transformed[value] {
				return counts, fmt.Errorf("input %s was transformed in two committed transactions", value)
			}
			transformed[value] = true
		}
	}
	logf("transformed %d inputs: %d transactions committed, %d aborted", len(transformed), counts.committed,
		counts.aborted)
	if counts.aborted == 0 {
		return counts, errors.New("no transaction was aborted, so the check proved nothing about aborts")
	}
	return counts, nil
}

// transformOnce begins a transaction and produces one output record for each input record fetched, to the input's
// partition; to abort, it flushes them first, so the aborted output reaches the log. It returns the inputs' values.
func transformOnce(session *kgo.GroupTransactSession, output string, fetches kgo.Fetches, wanted map[string]bool,
	abort bool) ([]string, error) {
	if err := session.Begin(); err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	var values []string
	for _, r := range fetches.Records() {
		value := string(r.Value)
		if !wanted[value] {
			return nil, fmt.Errorf("read_committed gave input %q at %s[%d]@%d, which was never committed", value,
				r.Topic, r.Partition, r.Offset)
		}
		values = append(values, value)
		session.Produce(context.Background(), &kgo.Record{Topic: output, Partition: r.Partition,
			Value: []byte("out-" + value)}, nil)
	}
	if abort {
		if err := session.Client().Flush(context.Background()); err != nil {
			return nil, fmt.Errorf("flush before an abort: %w", err)
		}
	}
	return values, nil
}

// onlyDeadline says whether every error in the fetches is the poll's own deadline passing.
func onlyDeadline(fetches kgo.Fetches) bool {
	for _, fe := range fetches.Errors() {
		if !errors.Is(fe.Err, context.DeadlineExceeded) {
			return false
		}
	}
	return true
}

// expectGroupPast checks, with OffsetFetch (require_stable), that the group's committed offset on each partition
// of the input stands past its last input record.
func expectGroupPast(bootstrap, group, input string, last map[int32]int64) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap))
	if err != nil {
		return err
	}
	defer cl.Close()
	request := kmsg.NewPtrOffsetFetchRequest()
	request.Group = group
	request.RequireStable = true
	topic := kmsg.NewOffsetFetchRequestTopic()
	topic.Topic = input
	for p := range int32(partitions) {
		topic.Partitions = append(topic.Partitions, p)
	}
	request.Topics = append(request.Topics, topic)
	ctx, cancel := context.WithTimeout(context.Background(), phaseTimeout)
	defer cancel()
	response, err := request.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("offset fetch of group %s: %w", group, err)
	}
	if err := kerr.ErrorForCode(response.ErrorCode); err != nil {
		return fmt.Errorf("offset fetch of group %s: %w", group, err)
	}
	var seen []string
	for _, t := range response.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return fmt.Errorf("offset fetch of group %s, %s[%d]: %w", group, t.Topic, p.Partition, err)
			}
			if p.Offset <= last[p.Partition] {
				return fmt.Errorf("group %s committed %d on %s[%d], not past its last input record at %d", group,
					p.Offset, t.Topic, p.Partition, last[p.Partition])
			}
			seen = append(seen, fmt.Sprintf("%s[%d]@%d", t.Topic, p.Partition, p.Offset))
		}
	}
	if len(seen) != partitions {
		return fmt.Errorf("offset fetch of group %s answered %d partitions, not %d", group, len(seen), partitions)
	}
	logf("group %s committed %s", group, strings.Join(seen, " "))
	return nil
}
