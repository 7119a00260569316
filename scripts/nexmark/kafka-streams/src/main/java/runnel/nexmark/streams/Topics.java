package runnel.nexmark.streams;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.KStream;

/**
 * The topics a query reads and writes. The event topics have null keys (Runnel's generator
 * spreads records round robin) and each record's timestamp is its event's {@code date_time},
 * which is the event time every windowed query uses (the default timestamp extractor).
 */
record Topics(String persons, String auctions, String bids, String output) {

    /** The event topics {@code prefix} + persons, auctions and bids, and {@code output}. */
    static Topics withPrefix(String prefix, String output) {
        return new Topics(prefix + "persons", prefix + "auctions", prefix + "bids", output);
    }

    /** The topic of an event stream: persons, auctions or bids. */
    String of(String stream) {
        return switch (stream) {
            case "persons" -> persons;
            case "auctions" -> auctions;
            case "bids" -> bids;
            default -> throw new IllegalArgumentException("no event stream " + stream);
        };
    }

    KStream<byte[], Person> persons(StreamsBuilder builder) {
        return builder.stream(persons, Consumed.with(Serdes.ByteArray(), Person.SERDE).withName("persons"));
    }

    KStream<byte[], Auction> auctions(StreamsBuilder builder) {
        return builder.stream(auctions, Consumed.with(Serdes.ByteArray(), Auction.SERDE).withName("auctions"));
    }

    KStream<byte[], Bid> bids(StreamsBuilder builder) {
        return builder.stream(bids, Consumed.with(Serdes.ByteArray(), Bid.SERDE).withName("bids"));
    }
}
