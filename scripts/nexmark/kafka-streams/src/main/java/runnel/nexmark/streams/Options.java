package runnel.nexmark.streams;

import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/** The command line. */
record Options(
        String bootstrap,
        Query query,
        String applicationId,
        String output,
        boolean exactlyOnce,
        int threads,
        Path stateDir,
        String inputPrefix,
        Duration grace,
        Duration commitInterval,
        Map<String, String> settings,
        boolean describe) {

    static final String USAGE = """
            usage: runnel.nexmark.streams.Main --bootstrap HOST:PORT --query QUERY --application-id ID
                       --output TOPIC --guarantee at-least-once|exactly-once
                       [--threads N] [--state-dir DIR] [--input-prefix PREFIX] [--grace-ms MS]
                       [--commit-interval-ms MS] [--setting KEY=VALUE]...
                   runnel.nexmark.streams.Main --query QUERY --describe

            Runs a Nexmark query (%s) as a Kafka Streams application until SIGTERM or SIGINT:
            reads PREFIX persons, auctions and bids, writes TOPIC (created with 2 partitions).
              --threads N      stream threads (default 2)
              --state-dir DIR  state directory (default a new temporary directory, removed at exit)
              --grace-ms MS    grace of the windows, in event time (default %d; see the README)
              --commit-interval-ms MS
                               commit.interval.ms, also under exactly-once (default 1000, as
                               the harness's other engines)
              --setting KEY=VALUE
                               any Kafka Streams setting, applied after the ones above (for
                               example producer.linger.ms=5); may be repeated
              --describe       print the topology and the output schema, and exit
            """.formatted(Query.names(), Nexmark.GRACE.toMillis());

    /** Parses {@code args}; an {@link IllegalArgumentException} says what is wrong. */
    static Options parse(String[] args) {
        String bootstrap = null;
        String query = null;
        String applicationId = null;
        String output = null;
        String guarantee = null;
        int threads = 2;
        Path stateDir = null;
        String inputPrefix = "";
        Duration grace = Nexmark.GRACE;
        Duration commitInterval = Duration.ofSeconds(1);
        Map<String, String> settings = new LinkedHashMap<>();
        boolean describe = false;
        for (int i = 0; i < args.length; i++) {
            String flag = args[i];
            if (flag.equals("--describe")) {
                describe = true;
                continue;
            }
            if (i + 1 == args.length) {
                throw new IllegalArgumentException(flag + " needs a value");
            }
            String value = args[++i];
            switch (flag) {
                case "--bootstrap" -> bootstrap = value;
                case "--query" -> query = value;
                case "--application-id" -> applicationId = value;
                case "--output" -> output = value;
                case "--guarantee" -> guarantee = value;
                case "--threads" -> threads = (int) number(flag, value, 1);
                case "--state-dir" -> stateDir = Path.of(value);
                case "--input-prefix" -> inputPrefix = value;
                case "--grace-ms" -> grace = Duration.ofMillis(number(flag, value, 0));
                case "--commit-interval-ms" -> commitInterval = Duration.ofMillis(number(flag, value, 1));
                case "--setting" -> {
                    int equals = value.indexOf('=');
                    if (equals < 1) {
                        throw new IllegalArgumentException("--setting takes KEY=VALUE, not " + value);
                    }
                    settings.put(value.substring(0, equals), value.substring(equals + 1));
                }
                default -> throw new IllegalArgumentException("unknown option " + flag);
            }
        }
        if (query == null) {
            throw new IllegalArgumentException("--query is required");
        }
        Query named = Query.named(query);
        if (!describe) {
            require("--bootstrap", bootstrap);
            require("--application-id", applicationId);
            require("--output", output);
            require("--guarantee", guarantee);
        }
        boolean exactlyOnce = switch (guarantee == null ? "at-least-once" : guarantee) {
            case "at-least-once" -> false;
            case "exactly-once" -> true;
            default -> throw new IllegalArgumentException(
                    "--guarantee is at-least-once or exactly-once, not " + guarantee);
        };
        return new Options(bootstrap, named, applicationId, output, exactlyOnce, threads,
                stateDir, inputPrefix, grace, commitInterval, settings, describe);
    }

    private static void require(String flag, String value) {
        if (value == null) {
            throw new IllegalArgumentException(flag + " is required");
        }
    }

    private static long number(String flag, String value, int least) {
        try {
            long number = Long.parseLong(value);
            if (number >= least) {
                return number;
            }
        } catch (NumberFormatException e) {
            // said below
        }
        throw new IllegalArgumentException(flag + " takes a whole number of at least " + least + ", not " + value);
    }
}
