package runnel.nexmark.streams;

import java.time.Duration;
import java.util.List;
import java.util.stream.Collectors;

import org.apache.avro.Schema;
import org.apache.kafka.streams.StreamsBuilder;

/**
 * A query: its name, the event streams it reads (persons, auctions, bids), the serde of what
 * it writes, and how its topology is built.
 */
record Query(String name, List<String> inputs, AvroSerde<?> output, Builder builder) {

    /** Adds a query's topology to a builder; {@code grace} is its windows' grace period. */
    @FunctionalInterface
    interface Builder {
        void build(StreamsBuilder builder, Topics topics, Duration grace);
    }

    static final List<Query> ALL = List.of(
            new Query("q0", List.of("bids"), Bid.SERDE, (builder, topics, grace) -> Q0.build(builder, topics)),
            new Query("q1", List.of("bids"), Bid.SERDE, (builder, topics, grace) -> Q1.build(builder, topics)),
            new Query("q2", List.of("bids"), Q2.AuctionPrice.SERDE, (builder, topics, grace) -> Q2.build(builder, topics)),
            new Query("q3", List.of("persons", "auctions"), Q3.NameCityStateId.SERDE,
                    (builder, topics, grace) -> Q3.build(builder, topics)),
            new Query("q5", List.of("bids"), Q5.HotItems.SERDE, Q5::build),
            new Query("q7", List.of("bids"), Q7.HighestBids.SERDE, Q7::build),
            new Query("q8", List.of("persons", "auctions"), Q8.NewSeller.SERDE, Q8::build),
            new Query("q11", List.of("bids"), Q11.BidderSession.SERDE, Q11::build));

    /** The query called {@code name} ("q5"). */
    static Query named(String name) {
        return ALL.stream()
                .filter(query -> query.name.equals(name))
                .findFirst()
                .orElseThrow(() -> new IllegalArgumentException(
                        "unknown query " + name + "; the queries are " + names()));
    }

    static String names() {
        return ALL.stream().map(Query::name).collect(Collectors.joining(", "));
    }

    /** The schema of the values it writes. */
    Schema outputSchema() {
        return output.schema();
    }

    void build(StreamsBuilder streamsBuilder, Topics topics, Duration grace) {
        builder.build(streamsBuilder, topics, grace);
    }

    @Override
    public String toString() {
        return name;
    }
}
