package io.sluice.apps;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.config.ConfigResource;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.io.TempDir;

/**
 * Kafka Connect 4.3.1's distributed worker, unchanged, in a process of its own: it creates its compacted config,
 * offset and status topics, copies a file through a topic with the FileStream source and sink connectors, and once
 * stopped and started again, finds its connectors in its config topic and goes on from its committed offsets: the
 * lines added meanwhile are copied once, and none twice.
 */
class KafkaConnectTest {

    @TempDir
    Path dir;

    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    private Process startWorker(Path properties, Path log) throws IOException {
        String java = ProcessHandle.current().info().command().orElse("java");
        return new ProcessBuilder(java, "-Xmx512m", "-cp", System.getProperty("java.class.path"),
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=info", "-Dorg.slf4j.simpleLogger.showDateTime=true",
                "org.apache.kafka.connect.cli.ConnectDistributed",
                properties.toString()).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(
                log.toFile())).start();
    }

    private HttpResponse<String> call(String method, String url, String body) throws IOException,
            InterruptedException {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(30))
                .header("Content-Type", "application/json");
        request.method(method, body == null ? HttpRequest.BodyPublishers.noBody()
                : HttpRequest.BodyPublishers.ofString(body));
        return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    private static void await(String what, int seconds, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("not within " + seconds + " s: " + what);
            }
            Thread.sleep(200);
        }
    }

    private boolean answers(String url) {
        try {
            return call("GET", url, null).statusCode() == 200;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    private static List<String> lines(Path file) {
        try {
            return Files.exists(file) ? Files.readAllLines(file) : List.of();
        } catch (IOException e) {
            return List.of();
        }
    }

    private static void append(Path file, int from, int to) throws IOException {
        List<String> lines = new ArrayList<>();
        for (int i = from; i < to; i++) {
            lines.add("line-" + i);
        }
        Files.write(file, lines, StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
    }

    private static void stop(Process worker) throws InterruptedException {
        worker.destroy();
        if (!worker.waitFor(60, TimeUnit.SECONDS)) {
            worker.destroyForcibly().waitFor();
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"broker", "cluster"})
    void aDistributedWorkerCopiesAFileAndGoesOnFromItsOffsetsAfterARestart(String kind) throws Exception {
        int restPort = Target.freePort();
        String rest = "http://127.0.0.1:" + restPort;
        Path in = dir.resolve("in.txt");
        Path out = dir.resolve("out.txt");
        // Kept after the test (the module's target directory), for a run that failed.
        Path log = Path.of("target", "connect-" + kind + ".log").toAbsolutePath();
        Files.createDirectories(log.getParent());
        Files.deleteIfExists(log);
        try (Target target = Target.start(kind, dir.resolve("sluice"))) {
            Path properties = dir.resolve("worker.properties");
            Files.writeString(properties, String.join("\n",
                    "bootstrap.servers=" + target.bootstrap(),
                    "group.id=connect-cluster",
                    "key.converter=org.apache.kafka.connect.storage.StringConverter",
                    "value.converter=org.apache.kafka.connect.storage.StringConverter",
                    "offset.storage.topic=connect-offsets",
                    "config.storage.topic=connect-configs",
                    "status.storage.topic=connect-status",
                    "offset.storage.replication.factor=" + target.replicas(),
                    "config.storage.replication.factor=" + target.replicas(),
                    "status.storage.replication.factor=" + target.replicas(),
                    "listeners=" + rest,
                    "offset.flush.interval.ms=500",
                    ""));
            append(in, 0, 100);
            Process worker = startWorker(properties, log);
            try {
                await("the worker's REST API (" + log + ")", 120, () -> answers(rest + "/connectors"));
                assertThat(call("POST", rest + "/connectors", "{\"name\":\"source\",\"config\":{\"connector.class\":"
                        + "\"org.apache.kafka.connect.file.FileStreamSourceConnector\",\"file\":\"" + in
                        + "\",\"topic\":\"copied\"}}").statusCode()).isEqualTo(201);
                assertThat(call("POST", rest + "/connectors", "{\"name\":\"sink\",\"config\":{\"connector.class\":"
                        + "\"org.apache.kafka.connect.file.FileStreamSinkConnector\",\"file\":\"" + out
                        + "\",\"topics\":\"copied\"}}").statusCode()).isEqualTo(201);
                await("the 100 lines copied", 120, () -> lines(out).size() >= 100);
                assertThat(lines(out)).isEqualTo(lines(in));
            } finally {
                stop(worker);
            }

            append(in, 100, 150);
            worker = startWorker(properties, log);
            try {
                await("the worker back, with its connectors", 120, () -> {
                    try {
                        HttpResponse<String> listed = call("GET", rest + "/connectors", null);
                        return listed.statusCode() == 200 && listed.body().contains("\"source\"")
                                && listed.body().contains("\"sink\"");
                    } catch (IOException e) {
                        return false;
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        return false;
                    }
                });
                await("the 50 lines added meanwhile copied", 120, () -> lines(out).size() >= 150);
                Thread.sleep(2_000); // room for a line copied twice to show
                assertThat(lines(out)).as("every line once, in order").isEqualTo(lines(in));
            } finally {
                stop(worker);
            }
            try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, target.bootstrap()))) {
                for (String topic : List.of("connect-offsets", "connect-configs", "connect-status")) {
                    ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
                    assertThat(admin.describeConfigs(List.of(resource)).all().get(30, TimeUnit.SECONDS).get(resource)
                            .get("cleanup.policy").value()).as(topic + ", as Connect created it").isEqualTo("compact");
                }
            }
        }
    }
}
