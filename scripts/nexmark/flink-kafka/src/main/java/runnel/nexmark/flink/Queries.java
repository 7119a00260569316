package runnel.nexmark.flink;

import java.util.List;
import java.util.Map;

/**
 * Flink's own Nexmark queries (github.com/nexmark/nexmark, flink-nexmark-queries), ported
 * verbatim from scripts/nexmark/flink_query.py: q1 converts with integer arithmetic, q4 and q9
 * require the reserve (q4 also a bid before {@code expires}), as Runnel's queries do.
 *
 * <p>The query text reads the views {@code person}, {@code auction} and {@code bid} that
 * {@link Main} defines over the Kafka topics, with the column names of flink_query.py.
 */
final class Queries {

    /**
     * One query: the topics it reads, its sink's columns, the sink's primary key ({@code null}
     * for an append-only query, which gets the plain Kafka sink; a query that updates its results
     * gets upsert-kafka keyed on it) and its SELECT.
     */
    record Query(String name, List<String> inputs, String sinkColumns, String primaryKey,
                 String select) {
        boolean upserts() {
            return primaryKey != null;
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
                    null,
                    "SELECT auction, bidder, price, event_time, extra FROM bid"),
            "q1", new Query("q1", List.of("bids"),
                    "auction BIGINT NOT NULL, bidder BIGINT NOT NULL, price BIGINT NOT NULL, "
                            + "date_time TIMESTAMP_LTZ(3) NOT NULL, extra STRING NOT NULL",
                    null,
                    "SELECT auction, bidder, price * 89 / 100, event_time, extra FROM bid"),
            "q2", new Query("q2", List.of("bids"),
                    "auction BIGINT NOT NULL, price BIGINT NOT NULL",
                    null,
                    "SELECT auction, price FROM bid WHERE MOD(auction, 123) = 0"),
            // An inner join of two append-only inputs only ever inserts.
            "q3", new Query("q3", List.of("persons", "auctions"),
                    "name STRING NOT NULL, city STRING NOT NULL, state STRING NOT NULL, "
                            + "id BIGINT NOT NULL",
                    null,
                    """
                    SELECT P.name, P.city, P.state, A.id
                    FROM auction AS A INNER JOIN person AS P ON A.seller = P.id
                    WHERE A.category = 10 AND (P.state = 'OR' OR P.state = 'ID' OR P.state = 'CA')"""),
            // Two stacked group aggregations: every new winning bid updates its category's average.
            "q4", new Query("q4", List.of("auctions", "bids"),
                    "category BIGINT NOT NULL, average BIGINT NOT NULL",
                    "category",
                    """
                    SELECT Q.category, AVG(Q.final)
                    FROM (
                      SELECT MAX(B.price) AS final, A.category
                      FROM auction A, bid B
                      WHERE A.id = B.auction AND B.event_time >= A.event_time AND B.event_time < A.expiresTime
                        AND B.price >= A.reserve
                      GROUP BY A.id, A.category
                    ) Q
                    GROUP BY Q.category"""),
            // Window aggregations joined on their windows: Flink plans a window join (append-only).
            "q5", new Query("q5", List.of("bids"),
                    "auction BIGINT NOT NULL, num BIGINT NOT NULL",
                    null,
                    """
                    SELECT AuctionBids.auction, AuctionBids.num
                    FROM (
                      SELECT auction, count(*) AS num, window_start AS starttime, window_end AS endtime
                      FROM TABLE(HOP(TABLE bid, DESCRIPTOR(event_time), INTERVAL '5' SECOND, INTERVAL '10' SECOND))
                      GROUP BY auction, window_start, window_end
                    ) AS AuctionBids
                    JOIN (
                      SELECT max(CountBids.num) AS maxn, CountBids.starttime, CountBids.endtime
                      FROM (
                        SELECT count(*) AS num, window_start AS starttime, window_end AS endtime
                        FROM TABLE(HOP(TABLE bid, DESCRIPTOR(event_time), INTERVAL '5' SECOND, INTERVAL '10' SECOND))
                        GROUP BY auction, window_start, window_end
                      ) AS CountBids
                      GROUP BY CountBids.starttime, CountBids.endtime
                    ) AS MaxBids
                    ON AuctionBids.starttime = MaxBids.starttime AND AuctionBids.endtime = MaxBids.endtime
                       AND AuctionBids.num >= MaxBids.maxn"""),
            // A regular inner join of the bids with an append-only window aggregate: inserts only.
            "q7", new Query("q7", List.of("bids"),
                    "auction BIGINT NOT NULL, price BIGINT NOT NULL, bidder BIGINT NOT NULL, "
                            + "date_time TIMESTAMP_LTZ(3) NOT NULL, extra STRING NOT NULL",
                    null,
                    """
                    SELECT B.auction, B.price, B.bidder, B.event_time, B.extra
                    FROM bid B
                    JOIN (
                      SELECT MAX(price) AS maxprice, window_end AS event_time
                      FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(event_time), INTERVAL '10' SECOND))
                      GROUP BY window_start, window_end
                    ) B1
                    ON B.price = B1.maxprice
                    WHERE B.event_time BETWEEN B1.event_time - INTERVAL '10' SECOND AND B1.event_time"""),
            // Two window aggregations joined on their windows: a window join (append-only).
            "q8", new Query("q8", List.of("persons", "auctions"),
                    "id BIGINT NOT NULL, name STRING NOT NULL, starttime TIMESTAMP(3) NOT NULL",
                    null,
                    """
                    SELECT P.id, P.name, P.starttime
                    FROM (
                      SELECT id, name, window_start AS starttime, window_end AS endtime
                      FROM TABLE(TUMBLE(TABLE person, DESCRIPTOR(event_time), INTERVAL '10' SECOND))
                      GROUP BY id, name, window_start, window_end
                    ) P
                    JOIN (
                      SELECT seller, window_start AS starttime, window_end AS endtime
                      FROM TABLE(TUMBLE(TABLE auction, DESCRIPTOR(event_time), INTERVAL '10' SECOND))
                      GROUP BY seller, window_start, window_end
                    ) A
                    ON P.id = A.seller AND P.starttime = A.starttime AND P.endtime = A.endtime"""),
            // Top-1 per auction over a regular join: a higher bid replaces the auction's winner
            // (Flink emits each new winner; keyed on the auction, the last one per key stands).
            "q9", new Query("q9", List.of("auctions", "bids"),
                    "id BIGINT NOT NULL, seller BIGINT NOT NULL, category BIGINT NOT NULL, "
                            + "auction BIGINT NOT NULL, price BIGINT NOT NULL",
                    "id",
                    """
                    SELECT id, seller, category, auction, price
                    FROM (
                      SELECT A.id, A.seller, A.category, B.auction, B.price,
                        ROW_NUMBER() OVER (PARTITION BY A.id ORDER BY B.price DESC, B.event_time ASC) AS rownum
                      FROM auction A, bid B
                      WHERE A.id = B.auction AND B.event_time BETWEEN A.event_time AND A.expiresTime
                        AND B.price >= A.reserve
                    )
                    WHERE rownum <= 1"""),
            // A session group window emits each session once, when the watermark closes it.
            "q11", new Query("q11", List.of("bids"),
                    "bidder BIGINT NOT NULL, bid_count BIGINT NOT NULL, "
                            + "starttime TIMESTAMP(3) NOT NULL, endtime TIMESTAMP(3) NOT NULL",
                    null,
                    """
                    SELECT B.bidder, count(*) AS bid_count,
                      SESSION_START(B.event_time, INTERVAL '10' SECOND),
                      SESSION_END(B.event_time, INTERVAL '10' SECOND)
                    FROM bid B
                    GROUP BY B.bidder, SESSION(B.event_time, INTERVAL '10' SECOND)"""));

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
