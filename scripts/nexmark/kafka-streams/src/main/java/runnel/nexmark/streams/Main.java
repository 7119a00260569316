package runnel.nexmark.streams;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;

import org.apache.avro.SchemaFormatter;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs one Nexmark query as a Kafka Streams application until SIGTERM or SIGINT; see
 * {@link Options#USAGE} and the README.
 */
public final class Main {

    private static final Logger log = LoggerFactory.getLogger(Main.class);

    /** Partitions of the output topic, as the harness's event topics by default. */
    private static final int OUTPUT_PARTITIONS = 2;

    private static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(30);

    private Main() {}

    public static void main(String[] args) throws Exception {
        Options options;
        try {
            options = Options.parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println(e.getMessage());
            System.err.print(Options.USAGE);
            System.exit(2);
            return;
        }
        Topics topics = Topics.withPrefix(options.inputPrefix(),
                options.output() == null ? "OUTPUT" : options.output());
        if (options.describe()) {
            Topology topology = topology(options, topics, config(options, Path.of("unused")));
            System.out.println(topology.describe());
            System.out.println("Output schema: " + SchemaFormatter.format("json/pretty", options.query().outputSchema()));
            return;
        }

        // A state directory of our own making is only for this run.
        boolean temporary = options.stateDir() == null;
        Path stateDir = temporary ? Files.createTempDirectory("nexmark-streams-") : options.stateDir();
        Properties config = config(options, stateDir);
        prepareTopics(options, topics);
        if (!run(topology(options, topics, config), config, temporary ? stateDir : null)) {
            System.exit(1);
        }
    }

    private static Properties config(Options options, Path stateDir) {
        Properties config = new Properties();
        config.put(StreamsConfig.APPLICATION_ID_CONFIG, options.describe() ? "describe" : options.applicationId());
        config.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, options.describe() ? "unused:9092" : options.bootstrap());
        config.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG,
                options.exactlyOnce() ? StreamsConfig.EXACTLY_ONCE_V2 : StreamsConfig.AT_LEAST_ONCE);
        // Also for exactly-once, whose default is 100 ms: the harness gives every engine the
        // same interval (a second unless it says otherwise).
        config.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, options.commitInterval().toMillis());
        config.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, options.threads());
        config.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        config.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        config.putAll(options.settings());
        return config;
    }

    private static Topology topology(Options options, Topics topics, Properties config) {
        StreamsBuilder builder = new StreamsBuilder();
        options.query().build(builder, topics, options.grace());
        return builder.build(config);
    }

    /** Checks that the inputs exist, so that a wrong prefix is an error, and creates the output. */
    private static void prepareTopics(Options options, Topics topics) throws InterruptedException {
        List<String> inputs = options.query().inputs().stream().map(topics::of).toList();
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, options.bootstrap()))) {
            try {
                admin.describeTopics(inputs).allTopicNames().get();
            } catch (ExecutionException e) {
                if (e.getCause() instanceof UnknownTopicOrPartitionException) {
                    throw new IllegalStateException("the query reads " + inputs + ", and one of them is missing");
                }
                throw new IllegalStateException("cannot describe " + inputs, e.getCause());
            }
            // The records carry their events' times, from the generator's fixed base time
            // (2024) on: time-based retention would delete them as soon as they are written.
            NewTopic output = new NewTopic(options.output(), Optional.of(OUTPUT_PARTITIONS), Optional.empty())
                    .configs(Map.of(TopicConfig.RETENTION_MS_CONFIG, "-1"));
            try {
                admin.createTopics(List.of(output)).all().get();
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof TopicExistsException)) {
                    throw new IllegalStateException("cannot create " + options.output(), e.getCause());
                }
            }
        }
        log.info("{} reads {} and writes {}", options.query(), inputs, options.output());
    }

    /** Runs until a signal closes it (true, and the JVM is exiting) or a stream thread fails. */
    private static boolean run(Topology topology, Properties config, Path temporaryStateDir) throws InterruptedException {
        KafkaStreams streams = new KafkaStreams(topology, config);
        CountDownLatch stopped = new CountDownLatch(1);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        streams.setUncaughtExceptionHandler(exception -> {
            failure.compareAndSet(null, exception);
            return StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        streams.setStateListener((now, before) -> {
            log.info("{} -> {}", before, now);
            if (now == KafkaStreams.State.ERROR) {
                stopped.countDown();
            }
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            logDropped(streams);
            streams.close(CLOSE_TIMEOUT);
            if (temporaryStateDir != null) {
                deleteRecursively(temporaryStateDir);
            }
            stopped.countDown();
        }, "nexmark-shutdown"));

        streams.start();
        stopped.await();
        if (failure.get() != null) {
            log.error("a stream thread failed", failure.get());
            return false;
        }
        return true;
    }

    /**
     * Logs how many records the tasks dropped, above all those too late for their window (the
     * per-record warnings are off, see simplelogger.properties): read before closing, as task
     * metrics go with their tasks.
     */
    private static void logDropped(KafkaStreams streams) {
        double dropped = streams.metrics().values().stream()
                .filter(metric -> metric.metricName().name().equals("dropped-records-total")
                        && metric.metricName().group().equals("stream-task-metrics"))
                .mapToDouble(metric -> ((Number) metric.metricValue()).doubleValue())
                .sum();
        log.info("dropped records (late or invalid): {}", (long) dropped);
    }

    private static void deleteRecursively(Path dir) {
        try (Stream<Path> paths = Files.walk(dir)) {
            paths.sorted(Comparator.reverseOrder()).forEach(path -> {
                try {
                    Files.delete(path);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
        } catch (IOException | UncheckedIOException e) {
            log.warn("cannot remove {}: {}", dir, e.toString());
        }
    }
}
