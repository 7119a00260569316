package runnel.nexmark.flink;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

/**
 * Flink's own Nexmark queries (github.com/nexmark/nexmark, flink-nexmark-queries), as
 * scripts/nexmark/flink-sql/&lt;query&gt;.sql holds them for this peer and flink_query.py alike
 * (the build copies them into the jar): q1 converts with integer arithmetic, q4 and q9 require
 * the reserve (q4 also a bid before {@code expires}), as Runnel's queries do.
 *
 * <p>The query text reads the views {@code person}, {@code auction} and {@code bid} that
 * {@link Main} defines over the Kafka topics, with the column names of flink_query.py.
 */
final class Queries {

    /**
     * One query: the topics it reads, its sink's columns, the sink's primary key ({@code null}
     * for an append-only query, which gets the plain Kafka sink; a query that updates its results
     * gets upsert-kafka keyed on it); its SELECT is {@link #select()}.
     */
    record Query(String name, List<String> inputs, String sinkColumns, String primaryKey) {
        boolean upserts() {
            return primaryKey != null;
        }

        /** The query's SELECT: flink-sql/&lt;name&gt;.sql, copied into the jar. */
        String select() {
            String resource = "/flink-sql/" + name + ".sql";
            try (InputStream text = Queries.class.getResourceAsStream(resource)) {
                if (text == null) {
                    throw new IllegalStateException(resource + " is not in the jar");
                }
                return new String(text.readAllBytes(), StandardCharsets.UTF_8);
            } catch (IOException error) {
                throw new UncheckedIOException("reading " + resource, error);
            }
        }
    }

    /*
     * The physical columns of the three topics, in the writer schemas' field order: Flink's
     * 'avro' format derives its schema from them, and plain Avro binary decodes positionally.
     * NOT NULL keeps the derived fields plain types instead of ["null", T] unions.
     */
    static final String PERSON_COLUMNS = """
            id BIGINT NOT NULL, name STRING NOT NULL, email_address STRING NOT NULL,
            credit_card STRING NOT NULL, city STRING NOT NULL, state STRING NOT NULL,
            date_time BIGINT NOT NULL, extra STRING NOT NULL""";
    static final String AUCTION_COLUMNS = """
            id BIGINT NOT NULL, item_name STRING NOT NULL, description STRING NOT NULL,
            initial_bid BIGINT NOT NULL, reserve BIGINT NOT NULL, date_time BIGINT NOT NULL,
            expires BIGINT NOT NULL, seller BIGINT NOT NULL, category BIGINT NOT NULL,
            extra STRING NOT NULL""";
    static final String BID_COLUMNS = """
            auction BIGINT NOT NULL, bidder BIGINT NOT NULL, price BIGINT NOT NULL,
            date_time BIGINT NOT NULL, extra STRING NOT NULL""";

    /* The views of flink_query.py, so that the query text below stays unchanged. */
    static final String PERSON_VIEW = """
            SELECT id, name, email_address, credit_card, city, state, event_time, extra
            FROM persons_topic""";
    static final String AUCTION_VIEW = """
            SELECT id, item_name, description, initial_bid, reserve, event_time,
              TO_TIMESTAMP_LTZ(expires, 3) AS expiresTime, seller, category, extra
            FROM auctions_topic""";
    static final String BID_VIEW = """
            SELECT auction, bidder, price, event_time, extra FROM bids_topic""";

    /*
     * Sink columns are those of flink_query.py, NOT NULL where the query's result type is (all
     * of them here), so that the results are plain Avro records like Runnel's, without unions.
     */
    private static final Map<String, Query> QUERIES = Map.of(
            "q0", new Query("q0", List.of("bids"),
                    "auction BIGINT NOT NULL, bidder BIGINT NOT NULL, price BIGINT NOT NULL, "
                            + "date_time TIMESTAMP_LTZ(3) NOT NULL, extra STRING NOT NULL",
                    null),
            "q1", new Query("q1", List.of("bids"),
                    "auction BIGINT NOT NULL, bidder BIGINT NOT NULL, price BIGINT NOT NULL, "
                            + "date_time TIMESTAMP_LTZ(3) NOT NULL, extra STRING NOT NULL",
                    null),
            "q2", new Query("q2", List.of("bids"),
                    "auction BIGINT NOT NULL, price BIGINT NOT NULL",
                    null),
            // An inner join of two append-only inputs only ever inserts.
            "q3", new Query("q3", List.of("persons", "auctions"),
                    "name STRING NOT NULL, city STRING NOT NULL, state STRING NOT NULL, "
                            + "id BIGINT NOT NULL",
                    null),
            // Two stacked group aggregations: every new winning bid updates its category's average.
            "q4", new Query("q4", List.of("auctions", "bids"),
                    "category BIGINT NOT NULL, average BIGINT NOT NULL",
                    "category"),
            // Window aggregations joined on their windows: Flink plans a window join (append-only).
            "q5", new Query("q5", List.of("bids"),
                    "auction BIGINT NOT NULL, num BIGINT NOT NULL",
                    null),
            // A regular inner join of the bids with an append-only window aggregate: inserts only.
            "q7", new Query("q7", List.of("bids"),
                    "auction BIGINT NOT NULL, price BIGINT NOT NULL, bidder BIGINT NOT NULL, "
                            + "date_time TIMESTAMP_LTZ(3) NOT NULL, extra STRING NOT NULL",
                    null),
            // Two window aggregations joined on their windows: a window join (append-only).
            "q8", new Query("q8", List.of("persons", "auctions"),
                    "id BIGINT NOT NULL, name STRING NOT NULL, starttime TIMESTAMP(3) NOT NULL",
                    null),
            // Top-1 per auction over a regular join: a higher bid replaces the auction's winner
            // (Flink emits each new winner; keyed on the auction, the last one per key stands).
            "q9", new Query("q9", List.of("auctions", "bids"),
                    "id BIGINT NOT NULL, seller BIGINT NOT NULL, category BIGINT NOT NULL, "
                            + "auction BIGINT NOT NULL, price BIGINT NOT NULL",
                    "id"),
            // A session group window emits each session once, when the watermark closes it.
            "q11", new Query("q11", List.of("bids"),
                    "bidder BIGINT NOT NULL, bid_count BIGINT NOT NULL, "
                            + "starttime TIMESTAMP(3) NOT NULL, endtime TIMESTAMP(3) NOT NULL",
                    null));

    private Queries() {}

    static Query get(String name) {
        Query query = QUERIES.get(name);
        if (query == null) {
            throw new IllegalArgumentException("unknown query " + name + "; one of "
                    + QUERIES.keySet().stream().sorted().toList());
        }
        return query;
    }
}
