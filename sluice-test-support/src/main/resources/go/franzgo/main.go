// Command franzgo runs franz-go (a Kafka client written in Go alone) against a broker and checks what it gets
// back. Each check exits 0 once everything it saw was right, and 1 with a line that starts "FAILED:" otherwise.
//
//	franzgo transactions --bootstrap 127.0.0.1:9092 --topic t --transactions 12 --records 40
//	franzgo eos --bootstrap 127.0.0.1:9092 --input in --output out --group g --records 200
//	franzgo compacted --bootstrap 127.0.0.1:9092 --topic c --records 20000 --keys 200 --deleted 10
//	franzgo secure --bootstrap 127.0.0.1:9093 --security-protocol SASL_SSL --mechanism SCRAM-SHA-512 --user u \
//	    --password p --ca ca.pem --topic s --records 100 --group g [--expect ok|authentication|tls]
//
// The transactions and eos checks create their topics with 2 partitions (and --replicas replicas) unless they exist;
// they write to both.
//
// transactions: a transactional producer (kgo.TransactionalID) writes --transactions transactions of --records
// records over both partitions, committing two of every three and aborting the third after flushing it (so the
// aborted records are in the log). A read_committed consumer then reads each committed record exactly once and no
// aborted one; a read_uncommitted consumer reads them all. One more transaction is left open: the last stable offset
// of each partition must stop at its first record and read_committed must not show it, until it commits.
//
// eos: a transactional producer writes --records input records in committed transactions, around an aborted one.
// A GroupTransactSession consumes them read_committed and, in each transaction, produces one output record per
// input record and commits the group's offsets with it; every third transaction is aborted after its output was
// flushed, so those inputs come back and are done again. The output read read_committed must hold each committed
// input exactly once, and the group's committed offsets must stand past every input record.
//
// compacted: reads partition 0 of --topic, made and filled beforehand with CompactedTopic of sluice-test-support
// (--records updates over --keys keys, --deleted keys deleted) and then compacted, so that its offsets jump where the
// cleaner dropped batches. It must get to the partition's end, its offsets only increasing, each record the one
// produced at its offset, each key's last record its latest (a deleted key's a tombstone), fewer than a quarter of
// the records produced read (compacted.go).
//
// secure: over a listener with TLS, SASL or both, creates --topic, produces --records records and reads them back in a
// consumer group, or (--expect authentication, --expect tls) finds its first request refused for that reason
// (secure.go).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// partitions is how many partitions every topic a check uses has.
const partitions = 2

// phaseTimeout bounds each step that waits on the broker (a read to the end, the EOS loop).
const phaseTimeout = 60 * time.Second

func main() {
	if len(os.Args) < 2 {
		fail(errors.New("usage: franzgo transactions|eos|compacted|secure --bootstrap HOST:PORT ..."))
	}
	check := os.Args[1]
	flags := flag.NewFlagSet(check, flag.ExitOnError)
	bootstrap := flags.String("bootstrap", "127.0.0.1:9092", "the broker to start from")
	topic := flags.String("topic", "franzgo-transactions", "transactions: the topic (2 partitions); compacted: the"+
		" compacted topic (1 partition)")
	transactions := flags.Int("transactions", 12, "transactions: how many transactions")
	records := flags.Int("records", 40, "records per transaction (transactions), input records (eos), or updates"+
		" (compacted)")
	keys := flags.Int("keys", 200, "compacted: the keys updated")
	deleted := flags.Int("deleted", 10, "compacted: the keys deleted")
	input := flags.String("input", "franzgo-input", "eos: the topic read (2 partitions)")
	output := flags.String("output", "franzgo-output", "eos: the topic written (2 partitions)")
	group := flags.String("group", "franzgo-eos", "eos: the consumer group")
	replicas := flags.Int("replicas", 1, "the replication factor of the topics created")
	var secured security
	flags.StringVar(&secured.protocol, "security-protocol", "PLAINTEXT", "secure: SSL, SASL_PLAINTEXT or SASL_SSL")
	flags.StringVar(&secured.mechanism, "mechanism", "", "secure: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
	flags.StringVar(&secured.user, "user", "", "secure: the SASL user")
	flags.StringVar(&secured.password, "password", "", "secure: the SASL password")
	flags.StringVar(&secured.ca, "ca", "", "secure: the CA certificate trusted (PEM)")
	flags.StringVar(&secured.cert, "cert", "", "secure: the client certificate (PEM)")
	flags.StringVar(&secured.key, "key", "", "secure: the client certificate's key (PEM)")
	expect := flags.String("expect", "ok", "secure: ok, authentication or tls")
	produceFor := flags.Duration("produce-for", 0, "secure: how long to go on producing after the first records")
	if err := flags.Parse(os.Args[2:]); err != nil {
		fail(err)
	}
	var err error
	switch check {
	case "transactions":
		err = createTopics(*bootstrap, int16(*replicas), *topic)
	case "eos":
		err = createTopics(*bootstrap, int16(*replicas), *input, *output)
	}
	if err != nil {
		fail(err)
	}
	switch check {
	case "transactions":
		err = checkTransactions(*bootstrap, *topic, *transactions, *records)
	case "eos":
		err = checkExactlyOnce(*bootstrap, *input, *output, *group, *records)
	case "compacted":
		err = checkCompacted(*bootstrap, *topic, compacted{int64(*records), int64(*keys), int64(*deleted)})
	case "secure":
		err = checkSecure(*bootstrap, *topic, *group, *records, secured, *expect, *produceFor)
	default:
		err = fmt.Errorf("unknown check %q (transactions, eos, compacted or secure)", check)
	}
	if err != nil {
		fail(err)
	}
	fmt.Printf("OK %s\n", check)
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "FAILED: %v\n", err)
	os.Exit(1)
}

func logf(format string, args ...any) {
	fmt.Printf(time.Now().UTC().Format("15:04:05.000 ")+format+"\n", args...)
}

// createTopics creates each topic with 2 partitions, unless it exists.
func createTopics(bootstrap string, replicas int16, topics ...string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap))
	if err != nil {
		return err
	}
	defer cl.Close()
	request := kmsg.NewPtrCreateTopicsRequest()
	request.TimeoutMillis = int32(phaseTimeout.Milliseconds())
	for _, topic := range topics {
		created := kmsg.NewCreateTopicsRequestTopic()
		created.Topic = topic
		created.NumPartitions = partitions
		created.ReplicationFactor = replicas
		request.Topics = append(request.Topics, created)
	}
	ctx, cancel := context.WithTimeout(context.Background(), phaseTimeout)
	defer cancel()
	response, err := request.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("create topics %v: %w", topics, err)
	}
	for _, t := range response.Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("create topic %s: %w", t.Topic, err)
		}
	}
	return nil
}

// transactionalProducer is a client with a transactional id that writes to the partition each record names.
func transactionalProducer(bootstrap, transactionalID string) (*kgo.Client, error) {
	return kgo.NewClient(
		kgo.SeedBrokers(bootstrap),
		kgo.TransactionalID(transactionalID),
		kgo.TransactionTimeout(60*time.Second),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0),
	)
}

// produced is where a record was written: its partition and offset.
type produced struct {
	partition int32
	offset    int64
}

// produceTransaction writes one transaction of records (value -> partition) and ends it: committed when commit,
// else aborted once every record is acknowledged, so the aborted records are in the log. It returns where each
// record went.
func produceTransaction(ctx context.Context, cl *kgo.Client, topic string, values []string, commit bool) (
	map[string]produced, error) {
	if err := cl.BeginTransaction(); err != nil {
		return nil, fmt.Errorf("begin transaction: %w", err)
	}
	where, err := produceAll(ctx, cl, topic, values)
	if err != nil {
		return nil, err
	}
	if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		return nil, fmt.Errorf("end transaction (commit %v): %w", commit, err)
	}
	return where, nil
}

// produceAll sends values round-robin over the partitions and waits until the broker acknowledged every one.
func produceAll(ctx context.Context, cl *kgo.Client, topic string, values []string) (map[string]produced, error) {
	var mu sync.Mutex
	where := make(map[string]produced, len(values))
	var errs []error
	for i, value := range values {
		record := &kgo.Record{Topic: topic, Partition: int32(i % partitions), Value: []byte(value)}
		cl.Produce(ctx, record, func(r *kgo.Record, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("produce %s: %w", r.Value, err))
				return
			}
			where[string(r.Value)] = produced{r.Partition, r.Offset}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return nil, fmt.Errorf("flush: %w", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return where, nil
}

func checkTransactions(bootstrap, topic string, transactions, perTransaction int) error {
	ctx := context.Background()
	producer, err := transactionalProducer(bootstrap, "franzgo-"+topic)
	if err != nil {
		return err
	}
	defer producer.Close()

	var committed, aborted []string
	for t := range transactions {
		values := make([]string, perTransaction)
		for i := range values {
			values[i] = fmt.Sprintf("t%03d-r%03d", t, i)
		}
		commit := t%3 != 1
		if _, err := produceTransaction(ctx, producer, topic, values, commit); err != nil {
			return fmt.Errorf("transaction %d: %w", t, err)
		}
		if commit {
			committed = append(committed, values...)
		} else {
			aborted = append(aborted, values...)
		}
	}
	logf("%d transactions: %d records committed, %d aborted", transactions, len(committed), len(aborted))

	if err := expectRead(bootstrap, topic, kgo.ReadCommitted(), committed, "read_committed"); err != nil {
		return err
	}
	if err := expectRead(bootstrap, topic, kgo.ReadUncommitted(), append(slices.Clone(committed), aborted...),
		"read_uncommitted"); err != nil {
		return err
	}

	// A transaction left open holds read_committed back at its first record on each partition.
	if err := producer.BeginTransaction(); err != nil {
		return fmt.Errorf("begin the open transaction: %w", err)
	}
	open := []string{"open-0", "open-1", "open-2", "open-3"}
	where, err := produceAll(ctx, producer, topic, open)
	if err != nil {
		return fmt.Errorf("the open transaction: %w", err)
	}
	stable, err := endOffsets(bootstrap, topic, kgo.ReadCommitted(), partitions)
	if err != nil {
		return err
	}
	for p := range int32(partitions) {
		first := min(where[open[p]].offset, where[open[p+partitions]].offset)
		if stable[p] != first {
			return fmt.Errorf("partition %d: with a transaction open from offset %d, the last stable offset is %d",
				p, first, stable[p])
		}
	}
	if err := expectRead(bootstrap, topic, kgo.ReadCommitted(), committed, "read_committed, a transaction open"); err != nil {
		return err
	}
	if err := producer.EndTransaction(ctx, kgo.TryCommit); err != nil {
		return fmt.Errorf("commit the open transaction: %w", err)
	}
	return expectRead(bootstrap, topic, kgo.ReadCommitted(), append(slices.Clone(committed), open...),
		"read_committed, the open transaction committed")
}

// expectRead reads the topic from its start to its end at the isolation level and checks it saw exactly want, each
// once.
func expectRead(bootstrap, topic string, isolation kgo.IsolationLevel, want []string, what string) error {
	got, err := readToEnd(bootstrap, topic, isolation)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if err := sameOnce(got, want); err != nil {
		return fmt.Errorf("%s of %s: %w", what, topic, err)
	}
	logf("%s of %s: %d records, each once", what, topic, len(got))
	return nil
}

// sameOnce says how got differs from want if it is not want in some order with no value twice.
func sameOnce(got, want []string) error {
	seen := make(map[string]int, len(got))
	for _, value := range got {
		seen[value]++
	}
	wanted := make(map[string]bool, len(want))
	var missing, twice, unexpected []string
	for _, value := range want {
		wanted[value] = true
		switch n := seen[value]; {
		case n == 0:
			missing = append(missing, value)
		case n > 1:
			twice = append(twice, fmt.Sprintf("%s (%d times)", value, n))
		}
	}
	for value := range seen {
		if !wanted[value] {
			unexpected = append(unexpected, value)
		}
	}
	if len(missing)+len(twice)+len(unexpected) == 0 {
		return nil
	}
	slices.Sort(missing)
	slices.Sort(unexpected)
	slices.Sort(twice)
	return fmt.Errorf("read %d records, wanted %d: missing %s; more than once %s; not expected %s", len(got),
		len(want), sample(missing), sample(twice), sample(unexpected))
}

func sample(values []string) string {
	if len(values) > 10 {
		return fmt.Sprintf("%d, first %v", len(values), values[:10])
	}
	return fmt.Sprintf("%d %v", len(values), values)
}

// readToEnd reads every partition of the topic from its start to its end at the isolation level (the last stable
// offset for read_committed, the high watermark otherwise) and returns the values of the records that are not
// control records. Control records are kept so that the read sees where it stands even where a partition ends with
// a marker.
func readToEnd(bootstrap, topic string, isolation kgo.IsolationLevel) ([]string, error) {
	ends, err := endOffsets(bootstrap, topic, isolation, partitions)
	if err != nil {
		return nil, err
	}
	start := make(map[int32]kgo.Offset, partitions)
	for p := range int32(partitions) {
		start[p] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(bootstrap),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: start}),
		kgo.FetchIsolationLevel(isolation),
		kgo.KeepControlRecords(),
		kgo.FetchMaxWait(200*time.Millisecond),
	)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), phaseTimeout)
	defer cancel()
	next := make(map[int32]int64, partitions) // the offset after the last record seen
	done := func() bool {
		for p, end := range ends {
			if next[p] < end {
				return false
			}
		}
		return true
	}
	var values []string
	for !done() {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("read to %v in %v: only to %v", ends, phaseTimeout, next)
		}
		if err := fetchErrors(fetches); err != nil {
			return nil, err
		}
		for _, r := range fetches.Records() {
			if r.Offset >= ends[r.Partition] {
				return nil, fmt.Errorf("partition %d: record at %d, past the end %d", r.Partition, r.Offset,
					ends[r.Partition])
			}
			next[r.Partition] = r.Offset + 1
			if !r.Attrs.IsControl() {
				values = append(values, string(r.Value))
			}
		}
	}
	return values, nil
}

func fetchErrors(fetches kgo.Fetches) error {
	var errs []error
	for _, fe := range fetches.Errors() {
		errs = append(errs, fmt.Errorf("fetch %s[%d]: %w", fe.Topic, fe.Partition, fe.Err))
	}
	return errors.Join(errs...)
}

// endOffsets asks ListOffsets for the end of each of the topic's count partitions at the isolation level.
func endOffsets(bootstrap, topic string, isolation kgo.IsolationLevel, count int32) (map[int32]int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	request := kmsg.NewPtrListOffsetsRequest()
	request.ReplicaID = -1
	if isolation == kgo.ReadCommitted() {
		request.IsolationLevel = 1
	}
	requested := kmsg.NewListOffsetsRequestTopic()
	requested.Topic = topic
	for p := range count {
		partition := kmsg.NewListOffsetsRequestTopicPartition()
		partition.Partition = p
		partition.Timestamp = -1 // the end
		requested.Partitions = append(requested.Partitions, partition)
	}
	request.Topics = append(request.Topics, requested)
	ctx, cancel := context.WithTimeout(context.Background(), phaseTimeout)
	defer cancel()
	response, err := request.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("list offsets of %s: %w", topic, err)
	}
	ends := make(map[int32]int64, count)
	for _, t := range response.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return nil, fmt.Errorf("list offsets of %s[%d]: %w", t.Topic, p.Partition, err)
			}
			ends[p.Partition] = p.Offset
		}
	}
	if len(ends) != int(count) {
		return nil, fmt.Errorf("list offsets of %s answered %d partitions, not %d", topic, len(ends), count)
	}
	return ends, nil
}
