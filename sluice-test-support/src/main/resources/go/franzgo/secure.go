package main

// secure: franz-go over a secured listener. With --expect ok, a client that connects as the flags say (TLS with the
// CA of --ca, a client certificate from --cert and --key; SASL --mechanism as --user with --password) creates --topic
// (1 partition), produces --records records to it, and a consumer group reads them back in order and commits; the
// group's committed offset is then --records. With --expect authentication or --expect tls, the client's first
// request must fail: with a SASL authentication error (kerr.SaslAuthenticationFailed, or a message saying
// authentication failed), or with a TLS error (an x509 verification failure, a TLS alert). With --produce-for, the
// producer then sends a record every 50 ms for that long, each acknowledged: on a listener with
// connections.max.reauth.ms shorter than that, franz-go re-authenticates on the way (KIP-368).

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// security is how a secure check connects.
type security struct {
	protocol, mechanism, user, password, ca, cert, key string
}

// options are the client options of the security flags.
func (s security) options() ([]kgo.Opt, error) {
	var opts []kgo.Opt
	if strings.HasSuffix(s.protocol, "SSL") {
		config := &tls.Config{MinVersion: tls.VersionTLS12}
		if s.ca != "" {
			pem, err := os.ReadFile(s.ca)
			if err != nil {
				return nil, err
			}
			config.RootCAs = x509.NewCertPool()
			if !config.RootCAs.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("no certificate in %s", s.ca)
			}
		}
		if s.cert != "" {
			pair, err := tls.LoadX509KeyPair(s.cert, s.key)
			if err != nil {
				return nil, err
			}
			config.Certificates = []tls.Certificate{pair}
		}
		opts = append(opts, kgo.DialTLSConfig(config))
	}
	if strings.HasPrefix(s.protocol, "SASL_") {
		var mechanism sasl.Mechanism
		switch s.mechanism {
		case "PLAIN":
			mechanism = plain.Auth{User: s.user, Pass: s.password}.AsMechanism()
		case "SCRAM-SHA-256":
			mechanism = scram.Auth{User: s.user, Pass: s.password}.AsSha256Mechanism()
		case "SCRAM-SHA-512":
			mechanism = scram.Auth{User: s.user, Pass: s.password}.AsSha512Mechanism()
		default:
			return nil, fmt.Errorf("unknown mechanism %q", s.mechanism)
		}
		opts = append(opts, kgo.SASL(mechanism))
	}
	return opts, nil
}

func checkSecure(bootstrap, topic, group string, records int, s security, expect string,
	produceFor time.Duration) error {
	opts, err := s.options()
	if err != nil {
		return err
	}
	if expect != "ok" {
		return checkRefused(bootstrap, opts, expect)
	}
	ctx, cancel := context.WithTimeout(context.Background(), phaseTimeout)
	defer cancel()
	admin, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(bootstrap)}, opts...)...)
	if err != nil {
		return err
	}
	defer admin.Close()
	create := kmsg.NewPtrCreateTopicsRequest()
	create.TimeoutMillis = int32(phaseTimeout.Milliseconds())
	created := kmsg.NewCreateTopicsRequestTopic()
	created.Topic = topic
	created.NumPartitions = 1
	created.ReplicationFactor = 1
	create.Topics = append(create.Topics, created)
	response, err := create.RequestWith(ctx, admin)
	if err != nil {
		return fmt.Errorf("create %s: %w", topic, err)
	}
	if err := kerr.ErrorForCode(response.Topics[0].ErrorCode); err != nil {
		return fmt.Errorf("create %s: %w", topic, err)
	}
	logf("created %s over %s", topic, s.protocol)

	producer, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(bootstrap), kgo.RequiredAcks(kgo.AllISRAcks())},
		opts...)...)
	if err != nil {
		return err
	}
	defer producer.Close()
	for i := 0; i < records; i++ {
		producer.Produce(ctx, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("value-%d", i))}, nil)
	}
	if err := producer.Flush(ctx); err != nil {
		return err
	}
	logf("produced %d records", records)
	for end, sent := time.Now().Add(produceFor), 0; time.Now().Before(end); sent++ {
		record := &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("value-%d", records))}
		if err := producer.ProduceSync(ctx, record).FirstErr(); err != nil {
			return fmt.Errorf("record %d of those sent for %s: %w", sent, produceFor, err)
		}
		records++
		time.Sleep(50 * time.Millisecond)
	}
	if produceFor > 0 {
		logf("produced for %s: %d records in all", produceFor, records)
	}

	consumer, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(bootstrap), kgo.ConsumeTopics(topic),
		kgo.ConsumerGroup(group), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, opts...)...)
	if err != nil {
		return err
	}
	defer consumer.Close()
	var read []string
	for len(read) < records {
		fetches := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			return fmt.Errorf("read %d of %d records within %s", len(read), records, phaseTimeout)
		}
		if err := fetchErrors(fetches); err != nil {
			return err
		}
		fetches.EachRecord(func(record *kgo.Record) {
			if int64(len(read)) != record.Offset {
				err = fmt.Errorf("record at offset %d read after %d records", record.Offset, len(read))
			}
			read = append(read, string(record.Value))
		})
		if err != nil {
			return err
		}
	}
	for i, value := range read {
		if value != fmt.Sprintf("value-%d", i) {
			return fmt.Errorf("record %d has value %q", i, value)
		}
	}
	if err := consumer.CommitUncommittedOffsets(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Group = group
	fetchTopic := kmsg.NewOffsetFetchRequestTopic()
	fetchTopic.Topic = topic
	fetchTopic.Partitions = []int32{0}
	fetch.Topics = append(fetch.Topics, fetchTopic)
	fetched, err := fetch.RequestWith(ctx, consumer)
	if err != nil {
		return fmt.Errorf("offset fetch: %w", err)
	}
	if len(fetched.Topics) != 1 || len(fetched.Topics[0].Partitions) != 1 ||
		fetched.Topics[0].Partitions[0].Offset != int64(records) {
		return fmt.Errorf("the group's committed offsets are %+v, not %d", fetched.Topics, records)
	}
	logf("group %s read the %d records in order and committed %d", group, records, records)
	return nil
}

// checkRefused expects the first request to fail for the reason given.
func checkRefused(bootstrap string, opts []kgo.Opt, expect string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(bootstrap), kgo.RequestRetries(0)}, opts...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	_, err = kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err == nil {
		return errors.New("the metadata was given")
	}
	text := err.Error()
	logf("refused: %v", err)
	switch expect {
	case "authentication":
		if errors.Is(err, kerr.SaslAuthenticationFailed) || strings.Contains(strings.ToLower(text),
			"authentication failed") {
			return nil
		}
	case "tls":
		var unknownAuthority x509.UnknownAuthorityError
		var alert tls.AlertError
		if errors.As(err, &unknownAuthority) || errors.As(err, &alert) || strings.Contains(text, "tls:") {
			return nil
		}
	default:
		return fmt.Errorf("unknown --expect %q", expect)
	}
	return fmt.Errorf("refused otherwise than for %s: %v", expect, err)
}
