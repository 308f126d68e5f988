package io.sluice.bench.broker;

import io.sluice.bench.lab.Charts;
import io.sluice.bench.lab.Lab;
import io.sluice.bench.lab.Progress;
import io.sluice.bench.lab.Table;
import io.sluice.broker.Broker;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSession;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManagerFactory;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.common.errors.SaslAuthenticationException;

/**
 * The TLS race: the broker race's produce and consume over each of a broker's listeners, PLAINTEXT, SSL and SASL_SSL
 * (SCRAM-SHA-512), on Sluice and on Apache Kafka configured alike (the same certificates, made at run time; TLS 1.3
 * with one cipher suite; the same client settings). Rounds in which each broker (the order alternating) is started
 * on a fresh directory with all three listeners, warmed up on each, then measured on each, the listeners' order
 * turning from round to round; medians per scenario, listener and broker; ratios Sluice/Kafka, and each broker's
 * figures over TLS against its own over PLAINTEXT in the same rounds (what TLS costs it).
 */
public final class TlsRaceRun {

    private static final String SLUICE = "sluice";
    private static final String KAFKA = "kafka";
    private static final List<String> BROKERS = List.of(SLUICE, KAFKA);

    private static final String PRODUCE = "produce 1 KiB acks=1";
    private static final String CONSUME = "consume 1 KiB, page cache";
    private static final List<String> SCENARIOS = List.of(PRODUCE, CONSUME);
    private static final String PLAINTEXT = "PLAINTEXT";
    /** The least time each listener is warmed up for on a fresh broker (full-size runs). */
    private static final double WARM_UP_SECONDS = 5;

    private final Lab lab;
    private final long records;
    private final int rounds;
    /** scenario -> listener -> broker -> one result per round */
    private final Map<String, Map<String, Map<String, List<Load.Result>>>> results = new LinkedHashMap<>();
    private final Table perRound;
    /** A directory for a flight recording of each broker and phases.csv, or null for none. */
    private final Path flightRecordings;

    /**
     * @param lab where tables, charts and checks go
     * @param records records of 1 KiB per produce run, on each listener
     * @param rounds interleaved rounds
     * @param flightRecordings a directory for a JFR recording of each broker and a file of when each measured run ran
     *     ({@code phases.csv}: broker, round, listener, scenario, start and end in epoch milliseconds), or null
     */
    public TlsRaceRun(Lab lab, long records, int rounds, Path flightRecordings) {
        this.lab = lab;
        this.records = records;
        this.rounds = rounds;
        this.flightRecordings = flightRecordings;
        for (String scenario : SCENARIOS) {
            Map<String, Map<String, List<Load.Result>>> byListener = new LinkedHashMap<>();
            for (String listener : SecuredListeners.NAMES) {
                Map<String, List<Load.Result>> byBroker = new LinkedHashMap<>();
                for (String broker : BROKERS) {
                    byBroker.put(broker, new ArrayList<>());
                }
                byListener.put(listener, byBroker);
            }
            results.put(scenario, byListener);
        }
        perRound = lab.table("tls-rounds", "Every round (records/s; broker and client CPU s per million records;"
                + " the 1-minute load average before the broker started)", "round", "broker", "listener", "scenario",
                "records/s", "broker CPU s / M records", "client CPU s / M records", "p99 ms", "load before");
    }

    /** Makes the certificates, runs every round, then publishes. */
    public void run() throws Exception {
        LabCertificates certificates = LabCertificates.make(lab.work().resolve("certificates"));
        SecuredListeners listeners = SecuredListeners.of(certificates);
        if (flightRecordings != null) {
            Files.writeString(flightRecordings.resolve("phases.csv"),
                    "broker,round,listener,scenario,start_epoch_ms,end_epoch_ms\n");
        }
        try (Progress progress = lab.progress("rounds", (long) rounds * 2)) {
            for (int round = 0; round < rounds; round++) {
                List<String> order = round % 2 == 0 ? List.of(KAFKA, SLUICE) : List.of(SLUICE, KAFKA);
                for (String broker : order) {
                    progress.say("round " + (round + 1) + " " + broker);
                    String load = loadAverage();
                    Path dir = lab.work().resolve("tls-" + broker + "-" + round);
                    Brokers.Tuning tuning = tuning(broker, round, listeners);
                    try (BrokerProcess process = broker.equals(SLUICE) ? Brokers.sluice(dir, false, tuning)
                            : Brokers.kafka(dir, false, tuning)) {
                        prepare(process, listeners, round == 0);
                        warmUp(process);
                        for (String listener : turned(SecuredListeners.NAMES, round)) {
                            measure(process, listener, round, load);
                        }
                    } finally {
                        Lab.deleteTree(dir);
                    }
                    progress.step(1);
                }
            }
        }
        publish();
    }

    private Brokers.Tuning tuning(String broker, int round, SecuredListeners listeners) {
        List<String> jvm = new ArrayList<>();
        if (flightRecordings != null) {
            jvm.add("-XX:StartFlightRecording=settings=profile,jdk.ExecutionSample#period=1ms,dumponexit=true,"
                    + "filename=" + flightRecordings.resolve("tls-" + broker + "-round" + (round + 1) + ".jfr"));
        }
        return new Brokers.Tuning(0, 0, jvm, listeners);
    }

    /**
     * Makes the SCRAM user (over PLAINTEXT, as an administrator would), waits until the SASL_SSL listener takes it,
     * and, in the first round, checks what each TLS listener agrees to and that a wrong password is refused.
     */
    private void prepare(BrokerProcess process, SecuredListeners listeners, boolean check) throws Exception {
        try (Admin admin = Admin.create(Load.adminConfig(process.over(PLAINTEXT)))) {
            admin.alterUserScramCredentials(List.of(new UserScramCredentialUpsertion(listeners.user(),
                    new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, SecuredListeners.SCRAM_ITERATIONS),
                    listeners.userPassword()))).all().get(60, TimeUnit.SECONDS);
        }
        process.awaitAnswering("SASL_SSL");
        if (!check) {
            return;
        }
        for (String listener : List.of("SSL", "SASL_SSL")) {
            SSLSession session = handshake(process.ports().get(listener), listeners.certificates());
            lab.check(session.getProtocol().equals(SecuredListeners.PROTOCOL)
                            && session.getCipherSuite().equals(SecuredListeners.CIPHER_SUITE),
                    process.name() + " " + listener + " listener agrees to " + session.getProtocol() + " "
                            + session.getCipherSuite() + " with a client offering TLS 1.2 and 1.3 and every suite");
        }
        Map<String, Object> wrong = Load.adminConfig(process.over("SASL_SSL"));
        wrong.putAll(listeners.clientSettings("SASL_SSL", listeners.userPassword() + "-wrong"));
        boolean refused;
        try (Admin admin = Admin.create(wrong)) {
            admin.describeCluster().nodes().get(30, TimeUnit.SECONDS);
            refused = false;
        } catch (ExecutionException e) {
            refused = e.getCause() instanceof SaslAuthenticationException;
        }
        lab.check(refused, process.name() + " SASL_SSL listener refuses a wrong " + SecuredListeners.MECHANISM
                + " password");
    }

    /**
     * Unmeasured: a fresh JVM interprets before it compiles, and each listener has code of its own (the engine's
     * record layer, SASL), so every listener first carries a tenth of a run (at least 5,000 records) for at least
     * {@link #WARM_UP_SECONDS} (none with --quick), produced and consumed, before any is timed. With a tenth of a run
     * alone, the first listener measured on a fresh broker took two to three times the broker CPU per record of the
     * same listener measured later (both brokers' compilers still at work), which the turning order spread over the
     * listeners but which widened every median's spread.
     */
    private void warmUp(BrokerProcess process) throws Exception {
        long warm = Math.max(5_000, records / 10);
        double seconds = lab.quick() ? 0 : WARM_UP_SECONDS;
        for (String listener : SecuredListeners.NAMES) {
            Load.Target target = process.over(listener);
            String topic = "warm-up-" + topicName(listener);
            Load.Result produced = Load.produceFor(target, topic, seconds, warm, 1024, "1");
            Load.consume(target, topic, produced.records());
        }
    }

    private void measure(BrokerProcess process, String listener, int round, String load) throws Exception {
        Load.Target target = process.over(listener);
        String topic = "p1k-" + topicName(listener);
        long start = System.currentTimeMillis();
        record(round, process.name(), listener, PRODUCE, Load.produce(target, topic, records, 1024, "1"), load);
        phase(process.name(), round, listener, PRODUCE, start);
        // A first, unmeasured pass, as in the broker race: the fetch path's compilation would otherwise weigh on a
        // pass of under a second.
        Load.consume(target, topic, records);
        start = System.currentTimeMillis();
        record(round, process.name(), listener, CONSUME, Load.consume(target, topic, records,
                Load.measuredReadSeconds(lab.quick())), load);
        phase(process.name(), round, listener, CONSUME, start);
    }

    /** Notes when a measured run ran, beside the flight recordings, so that a profile can be cut to it. */
    private void phase(String broker, int round, String listener, String scenario, long startMillis)
            throws IOException {
        if (flightRecordings != null) {
            Files.writeString(flightRecordings.resolve("phases.csv"), broker + "," + (round + 1) + "," + listener
                    + ",\"" + scenario + "\"," + startMillis + "," + System.currentTimeMillis() + "\n",
                    StandardOpenOption.APPEND);
        }
    }

    private void record(int round, String broker, String listener, String scenario, Load.Result result,
                        String load) {
        lab.check(Load.complete(result, records, scenario.equals(CONSUME)), broker + " " + scenario + " over "
                + listener + ": " + Load.tally(result, records, scenario.equals(CONSUME)));
        results.get(scenario).get(listener).get(broker).add(result);
        perRound.add(String.valueOf(round + 1), broker, listener, scenario, f0(result.perSecond()),
                f2(result.brokerCpuPerMillion()), f2(result.clientCpuPerMillion()),
                Double.isNaN(result.p99Millis()) ? "" : f2(result.p99Millis()), load);
    }

    /** @return {@code names} turned left by {@code round}, so that no listener is always measured first */
    static List<String> turned(List<String> names, int round) {
        List<String> turned = new ArrayList<>();
        for (int i = 0; i < names.size(); i++) {
            turned.add(names.get((i + round) % names.size()));
        }
        return turned;
    }

    private static String topicName(String listener) {
        return listener.toLowerCase(Locale.ROOT).replace('_', '-');
    }

    /**
     * A TLS handshake with the listener on {@code port} from the JDK's own client, trusting the race's authority and
     * checking the certificate's address, offering TLS 1.2 and 1.3 and the JDK's every default suite: what the
     * broker picks is what it allows.
     *
     * @return the session agreed
     */
    private static SSLSession handshake(int port, LabCertificates certificates) throws IOException,
            GeneralSecurityException {
        KeyStore trusted = KeyStore.getInstance("PKCS12");
        try (InputStream in = Files.newInputStream(certificates.trustStore())) {
            trusted.load(in, certificates.password().toCharArray());
        }
        TrustManagerFactory trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        trust.init(trusted);
        SSLContext context = SSLContext.getInstance("TLS");
        context.init(null, trust.getTrustManagers(), null);
        try (SSLSocket socket = (SSLSocket) context.getSocketFactory().createSocket("127.0.0.1", port)) {
            SSLParameters parameters = socket.getSSLParameters();
            parameters.setProtocols(new String[] {"TLSv1.2", "TLSv1.3"});
            parameters.setEndpointIdentificationAlgorithm("HTTPS");
            socket.setSSLParameters(parameters);
            socket.setSoTimeout(30_000);
            socket.startHandshake();
            return socket.getSession();
        }
    }

    /** @return the 1-minute load average now, from /proc/loadavg ("" where there is none) */
    static String loadAverage() {
        try {
            return Files.readString(Path.of("/proc/loadavg")).split(" ")[0];
        } catch (IOException | RuntimeException e) {
            return "";
        }
    }

    /** @return the round with the median throughput */
    private static Load.Result median(List<Load.Result> rounds) {
        List<Load.Result> sorted = new ArrayList<>(rounds);
        sorted.sort(Comparator.comparingDouble(Load.Result::perSecond));
        return sorted.get((sorted.size() - 1) / 2);
    }

    private void publish() {
        Table table = lab.table("tls", "Sluice broker vs Apache Kafka 4.3.1 by listener (medians of " + rounds
                        + " rounds)", "scenario", "listener", "broker", "records/s", "MB/s", "broker CPU s / M records",
                "client CPU s / M records", "p50 ms", "p99 ms");
        Table ratios = lab.table("tls-ratios", "Sluice / Kafka (medians)", "scenario", "listener", "throughput",
                "broker CPU per record", "p99 latency");
        Table cost = lab.table("tls-cost", "What TLS costs each broker: its median over the listener against its own"
                + " over PLAINTEXT", "scenario", "listener", "broker", "throughput", "broker CPU per record");
        List<String> categories = new ArrayList<>();
        Map<String, List<Double>> throughput = new LinkedHashMap<>();
        Map<String, List<Double>> cpu = new LinkedHashMap<>();
        for (String broker : BROKERS) {
            throughput.put(broker, new ArrayList<>());
            cpu.put(broker, new ArrayList<>());
        }
        for (String scenario : SCENARIOS) {
            Map<String, Load.Result> plaintext = new LinkedHashMap<>();
            for (String listener : SecuredListeners.NAMES) {
                Map<String, Load.Result> medians = new LinkedHashMap<>();
                for (String broker : BROKERS) {
                    Load.Result m = median(results.get(scenario).get(listener).get(broker));
                    medians.put(broker, m);
                    table.add(scenario, listener, broker, f0(m.perSecond()), f1(m.perSecond() * 1024 / 1e6),
                            f2(m.brokerCpuPerMillion()), f2(m.clientCpuPerMillion()),
                            Double.isNaN(m.p50Millis()) ? "" : f2(m.p50Millis()),
                            Double.isNaN(m.p99Millis()) ? "" : f2(m.p99Millis()));
                    throughput.get(broker).add(m.perSecond());
                    cpu.get(broker).add(m.brokerCpuPerMillion());
                    if (listener.equals(PLAINTEXT)) {
                        plaintext.put(broker, m);
                    } else {
                        Load.Result p = plaintext.get(broker);
                        cost.add(scenario, listener, broker, f2(m.perSecond() / p.perSecond()),
                                f2(m.brokerCpuPerMillion() / p.brokerCpuPerMillion()));
                        String key = broker + "-" + key(scenario) + "-" + key(listener);
                        lab.figure(key + "-throughput-over-plaintext", m.perSecond() / p.perSecond());
                        lab.figure(key + "-broker-cpu-over-plaintext",
                                m.brokerCpuPerMillion() / p.brokerCpuPerMillion());
                    }
                }
                Load.Result s = medians.get(SLUICE);
                Load.Result k = medians.get(KAFKA);
                String p99 = Double.isNaN(s.p99Millis()) ? "" : f2(s.p99Millis() / k.p99Millis());
                ratios.add(scenario, listener, f2(s.perSecond() / k.perSecond()),
                        f2(s.brokerCpuPerMillion() / k.brokerCpuPerMillion()), p99);
                String key = key(scenario) + "-" + key(listener);
                lab.figure(key + "-throughput-ratio", s.perSecond() / k.perSecond());
                lab.figure(key + "-broker-cpu-ratio", s.brokerCpuPerMillion() / k.brokerCpuPerMillion());
                categories.add((scenario.equals(PRODUCE) ? "produce" : "consume") + " " + listener);
            }
        }
        lab.chart("tls-throughput", Charts.bars("Records per second by listener (median)", "scenario and listener",
                "records/s", categories, throughput, false));
        lab.chart("tls-cpu", Charts.bars("Broker CPU seconds per million records by listener (median)",
                "scenario and listener", "CPU s / M records", categories, cpu, false));
        lab.note("Both brokers serve three listeners at once on 127.0.0.1, written with Kafka's keys: PLAINTEXT, SSL"
                + " and SASL_SSL (" + SecuredListeners.MECHANISM + ", a credential of "
                + SecuredListeners.SCRAM_ITERATIONS + " iterations made with AlterUserScramCredentials). TLS is "
                + SecuredListeners.PROTOCOL + " with " + SecuredListeners.CIPHER_SUITE + " only, on both brokers and"
                + " their clients, with an EC P-256 certificate made at run time with keytool for both; no client"
                + " certificates. Sluice's TLS is the JDK's SSLEngine, Kafka's too (its default provider).");
        lab.note("Each broker, fresh, first takes an unmeasured warm-up on every listener (a tenth of a run and at"
                + " least " + (lab.quick() ? 0 : (int) WARM_UP_SECONDS) + " s, produced and consumed); then each listener in turn, the order turning from round to round: the produce, an"
                + " unmeasured read of its topic, and the measured read. A consumer over TLS gets its records copied"
                + " and encrypted by either broker (no sendfile under TLS); over PLAINTEXT both send them with"
                + " sendfile.");
        lab.note("Otherwise as in the broker race: child JVMs (-Xms1g -Xmx1g, G1), one at a time, on the work"
                + " directory's disk; the stock kafka-clients 4.3.1 client in this JVM (linger 5 ms, 16 KiB batches,"
                + " no compression, one partition); Sluice ASYNC on the " + Broker.ASYNC_WRITE_PATH + " write path."
                + " Broker CPU from /proc/<pid>/stat, client CPU from this process's.");
    }

    private static String key(String text) {
        return text.replaceAll("[^a-zA-Z0-9]+", "-").toLowerCase(Locale.ROOT).replaceAll("-$", "");
    }

    private static String f0(double v) {
        return String.format(Locale.ROOT, "%,.0f", v);
    }

    private static String f1(double v) {
        return String.format(Locale.ROOT, "%.1f", v);
    }

    private static String f2(double v) {
        return String.format(Locale.ROOT, "%.2f", v);
    }
}
