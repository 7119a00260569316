package runnel.nexmark.flink;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.stream.Stream;

import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.CoreOptions;
import org.apache.flink.configuration.PipelineOptions;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.core.execution.CheckpointingMode;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.ExplainDetail;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.api.config.TableConfigOptions;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.errors.TopicExistsException;

/**
 * Runs one of Flink's Nexmark SQL queries ({@link Queries}) in a local mini-cluster, reading
 * the events from Kafka topics and writing the results to a Kafka topic, until it is killed.
 *
 * <pre>
 * java -cp CLASSPATH runnel.nexmark.flink.Main --bootstrap 127.0.0.1:9092 --query q1 \
 *     --group ID --output TOPIC --guarantee at-least-once|exactly-once [--parallelism 2] \
 *     [--checkpoint-interval-ms 1000] [--input-prefix PREFIX] [--explain]
 * </pre>
 *
 * <p>The source commits its offsets to the consumer group on every completed checkpoint, which
 * is how scripts/nexmark/kafka_harness.py measures progress. {@code --explain} prints the plan
 * with its changelog modes instead of running it.
 */
public final class Main {

    private static final int OUTPUT_PARTITIONS = 2;

    /**
     * Kafka brokers cap transactions at 15 minutes (transaction.max.timeout.ms) while Flink's
     * sink asks for an hour by default, which the broker refuses.
     */
    private static final String TRANSACTION_TIMEOUT_MS = "600000";

    private Main() {}

    public static void main(String[] args) throws Exception {
        long started = System.nanoTime();
        Arguments arguments;
        try {
            arguments = Arguments.parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("error: " + e.getMessage());
            System.err.println(Arguments.USAGE);
            System.exit(2);
            return;
        }
        Queries.Query query = Queries.get(arguments.query);

        // Checkpoints and the mini-cluster's scratch files (its working directory, the extracted
        // RPC jar) go to one directory per run, removed on exit: the job runs until SIGTERM,
        // when Flink does not clean up after itself.
        Path work = Files.createTempDirectory("runnel-nexmark-flink-");
        Runtime.getRuntime().addShutdownHook(new Thread(() -> deleteRecursively(work)));

        StreamExecutionEnvironment env =
                StreamExecutionEnvironment.createLocalEnvironment(configuration(arguments, work));
        StreamTableEnvironment tables =
                StreamTableEnvironment.create(env, EnvironmentSettings.inStreamingMode());
        createSources(tables, arguments);
        createSink(tables, arguments, query);
        String insert = "INSERT INTO nexmark_sink " + query.select();

        if (arguments.explain) {
            System.out.println(tables.sqlQuery(query.select()).getResolvedSchema());
            System.out.println(tables.explainSql(insert, ExplainDetail.CHANGELOG_MODE));
            return;
        }

        createTopic(arguments.bootstrap, arguments.output);
        TableResult result = tables.executeSql(insert);
        System.err.printf("flink %s: job %s submitted after %d ms (%s sink, parallelism %d, %s)%n",
                query.name(),
                result.getJobClient().map(client -> client.getJobID().toString()).orElse("?"),
                (System.nanoTime() - started) / 1_000_000,
                query.upserts() ? "upsert-kafka" : "kafka", arguments.parallelism,
                arguments.guarantee);
        // The sources are unbounded: this returns only if the job fails.
        result.await();
    }

    /** The mini-cluster's configuration: parallelism, checkpoints, state backend, no web UI. */
    private static Configuration configuration(Arguments arguments, Path work) throws IOException {
        Configuration config = new Configuration();
        config.set(CoreOptions.DEFAULT_PARALLELISM, arguments.parallelism);
        config.set(PipelineOptions.OBJECT_REUSE, true);
        // Windows align to, and TIMESTAMP results (window bounds) read in, UTC whatever the host's zone.
        config.set(TableConfigOptions.LOCAL_TIME_ZONE, "UTC");
        // Checkpoints drive the offset commits the harness measures, so they are always on.
        config.set(CheckpointingOptions.CHECKPOINTING_INTERVAL,
                Duration.ofMillis(arguments.checkpointIntervalMs));
        config.set(CheckpointingOptions.CHECKPOINTING_CONSISTENCY_MODE,
                arguments.exactlyOnce() ? CheckpointingMode.EXACTLY_ONCE : CheckpointingMode.AT_LEAST_ONCE);
        config.set(StateBackendOptions.STATE_BACKEND, "hashmap");
        config.set(CheckpointingOptions.CHECKPOINT_STORAGE, "filesystem");
        config.set(CheckpointingOptions.CHECKPOINTS_DIRECTORY,
                Files.createDirectory(work.resolve("checkpoints")).toUri().toString());
        config.set(CoreOptions.TMP_DIRS, Files.createDirectory(work.resolve("tmp")).toString());
        // The mini-cluster always starts a REST endpoint (there is no web UI on the classpath):
        // a free port keeps concurrent runs from clashing on 8081.
        config.set(RestOptions.BIND_PORT, "0");
        return config;
    }

    /**
     * One Kafka table per topic, event time from date_time with Flink Nexmark's one-second
     * watermark delay, and the views of flink_query.py over them.
     */
    private static void createSources(StreamTableEnvironment tables, Arguments arguments) {
        Map<String, String> columns = Map.of(
                "persons", Queries.PERSON_COLUMNS,
                "auctions", Queries.AUCTION_COLUMNS,
                "bids", Queries.BID_COLUMNS);
        for (String stream : List.of("persons", "auctions", "bids")) {
            tables.executeSql("CREATE TABLE " + stream + "_topic (\n"
                    + columns.get(stream) + ",\n"
                    + "event_time AS TO_TIMESTAMP_LTZ(date_time, 3),\n"
                    + "WATERMARK FOR event_time AS event_time - INTERVAL '1' SECOND\n"
                    + ") WITH (\n"
                    + option("connector", "kafka")
                    + option("topic", arguments.inputPrefix + stream)
                    + option("properties.bootstrap.servers", arguments.bootstrap)
                    + option("properties.group.id", arguments.group)
                    + option("scan.startup.mode", "earliest-offset")
                    // Plain Avro binary with the schema derived from the columns above.
                    + "'format' = 'avro')");
        }
        tables.executeSql("CREATE VIEW person AS " + Queries.PERSON_VIEW);
        tables.executeSql("CREATE VIEW auction AS " + Queries.AUCTION_VIEW);
        tables.executeSql("CREATE VIEW bid AS " + Queries.BID_VIEW);
    }

    /** The plain Kafka sink for append-only queries, upsert-kafka for those that update. */
    private static void createSink(StreamTableEnvironment tables, Arguments arguments,
                                   Queries.Query query) {
        StringBuilder ddl = new StringBuilder("CREATE TABLE nexmark_sink (\n")
                .append(query.sinkColumns());
        if (query.upserts()) {
            ddl.append(",\nPRIMARY KEY (").append(query.primaryKey()).append(") NOT ENFORCED");
        }
        ddl.append("\n) WITH (\n")
                .append(option("topic", arguments.output))
                .append(option("properties.bootstrap.servers", arguments.bootstrap))
                .append(option("sink.delivery-guarantee", arguments.guarantee));
        if (arguments.exactlyOnce()) {
            ddl.append(option("sink.transactional-id-prefix", arguments.group))
                    .append(option("properties.transaction.timeout.ms", TRANSACTION_TIMEOUT_MS));
        }
        // The legacy Avro timestamp mapping cannot write TIMESTAMP_LTZ; the current one writes
        // TIMESTAMP_LTZ as timestamp-millis and TIMESTAMP as local-timestamp-millis (both longs).
        if (query.upserts()) {
            ddl.append(option("connector", "upsert-kafka"))
                    .append(option("key.format", "avro"))
                    .append(option("key.avro.timestamp_mapping.legacy", "false"))
                    .append(option("value.format", "avro"))
                    .append("'value.avro.timestamp_mapping.legacy' = 'false')");
        } else {
            ddl.append(option("connector", "kafka"))
                    .append(option("format", "avro"))
                    .append("'avro.timestamp_mapping.legacy' = 'false')");
        }
        tables.executeSql(ddl.toString());
    }

    private static String option(String key, String value) {
        return "'" + key + "' = '" + value.replace("'", "''") + "',\n";
    }

    /** Creates the results topic unless it exists, so that its partition count is ours. */
    private static void createTopic(String bootstrap, String topic)
            throws InterruptedException, ExecutionException {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            NewTopic newTopic = new NewTopic(topic, Optional.of(OUTPUT_PARTITIONS), Optional.empty());
            admin.createTopics(Set.of(newTopic)).all().get();
        } catch (ExecutionException e) {
            if (!(e.getCause() instanceof TopicExistsException)) {
                throw e;
            }
        }
    }

    private static void deleteRecursively(Path root) {
        try (Stream<Path> paths = Files.walk(root)) {
            paths.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
        } catch (IOException | UncheckedIOException e) {
            // Best effort: a temp directory left behind is harmless.
        }
    }

    /** The command line. */
    private record Arguments(String bootstrap, String query, String group, String output,
                             String guarantee, int parallelism, long checkpointIntervalMs,
                             String inputPrefix, boolean explain) {

        static final String USAGE = "usage: Main --bootstrap HOST:PORT --query q0|q1|q2|q3|q4|q5|q7|q8|q9|q11"
                + " --group ID --output TOPIC --guarantee at-least-once|exactly-once"
                + " [--parallelism 2] [--checkpoint-interval-ms 1000] [--input-prefix PREFIX] [--explain]";

        boolean exactlyOnce() {
            return guarantee.equals("exactly-once");
        }

        static Arguments parse(String[] args) {
            Map<String, String> values = new HashMap<>(Map.of(
                    "--parallelism", "2", "--checkpoint-interval-ms", "1000", "--input-prefix", ""));
            boolean explain = false;
            List<String> known = List.of("--bootstrap", "--query", "--group", "--output",
                    "--guarantee", "--parallelism", "--checkpoint-interval-ms", "--input-prefix");
            for (int i = 0; i < args.length; i++) {
                if (args[i].equals("--explain")) {
                    explain = true;
                } else if (known.contains(args[i]) && i + 1 < args.length) {
                    values.put(args[i], args[++i]);
                } else {
                    throw new IllegalArgumentException("unexpected argument " + args[i]);
                }
            }
            List<String> missing = new ArrayList<>();
            for (String required : List.of("--bootstrap", "--query", "--group", "--output", "--guarantee")) {
                if (!values.containsKey(required)) {
                    missing.add(required);
                }
            }
            if (!missing.isEmpty()) {
                throw new IllegalArgumentException("missing " + String.join(", ", missing));
            }
            String guarantee = values.get("--guarantee");
            if (!guarantee.equals("at-least-once") && !guarantee.equals("exactly-once")) {
                throw new IllegalArgumentException("--guarantee must be at-least-once or exactly-once");
            }
            int parallelism = Integer.parseInt(values.get("--parallelism"));
            long interval = Long.parseLong(values.get("--checkpoint-interval-ms"));
            if (parallelism < 1 || interval < 10) {
                throw new IllegalArgumentException("--parallelism must be >= 1 and --checkpoint-interval-ms >= 10");
            }
            return new Arguments(values.get("--bootstrap"), values.get("--query"), values.get("--group"),
                    values.get("--output"), guarantee, parallelism, interval, values.get("--input-prefix"),
                    explain);
        }
    }
}
