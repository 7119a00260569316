package runnel.nexmark.streams;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

import org.apache.avro.io.BinaryDecoder;
import org.apache.avro.io.BinaryEncoder;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.Suppressed.BufferConfig;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.state.WindowStore;

/**
 * Query 7, highest bid: per tumbling window of 10 s, the bids at the highest price (all of
 * them when several tie).
 *
 * <p>As Runnel's, one group: every bid goes to a single key, so one task sees all of a window,
 * keeping only the bids at the highest price so far, and emits when the window closes.
 */
final class Q7 {

    /** The one group's key (Runnel's panes carry the empty key too). */
    private static final String ALL = "";

    /** Ties in the order Runnel lists them: by time, then auction, then bidder. */
    private static final Comparator<Bid> ORDER = Comparator.comparingLong(Bid::dateTime)
            .thenComparingLong(Bid::auction)
            .thenComparingLong(Bid::bidder);

    /** A window's highest bids (Runnel's {@code HighestBids} with its window). */
    record HighestBids(long windowStart, long windowEnd, long price, List<Bid> bids) {

        static final AvroSerde<HighestBids> SERDE = AvroSerde.of("""
                {"type": "record", "name": "HighestBids", "fields": [
                  {"name": "window_start", "type": "long"},
                  {"name": "window_end", "type": "long"},
                  {"name": "price", "type": "long"},
                  {"name": "bids", "type": {"type": "array", "items": %s}}
                ]}""".formatted(Bid.SCHEMA), HighestBids::read, HighestBids::write);

        static HighestBids read(BinaryDecoder in) throws IOException {
            return new HighestBids(in.readLong(), in.readLong(), in.readLong(), Avro.readArray(in, Bid::read));
        }

        static void write(HighestBids value, BinaryEncoder out) throws IOException {
            out.writeLong(value.windowStart);
            out.writeLong(value.windowEnd);
            out.writeLong(value.price);
            Avro.writeArray(value.bids, out, Bid::write);
        }
    }

    /** The accumulator: the bids at the highest price so far. */
    record Highest(List<Bid> bids) {

        static final Highest NONE = new Highest(List.of());

        static final AvroSerde<Highest> SERDE = AvroSerde.of("""
                {"type": "array", "items": %s}""".formatted(Bid.SCHEMA),
                in -> new Highest(Avro.readArray(in, Bid::read)),
                (value, out) -> Avro.writeArray(value.bids, out, Bid::write));

        Highest add(Bid bid) {
            if (bids.isEmpty() || bid.price() > bids.get(0).price()) {
                return new Highest(List.of(bid));
            }
            if (bid.price() < bids.get(0).price()) {
                return this;
            }
            List<Bid> tied = new ArrayList<>(bids.size() + 1);
            tied.addAll(bids);
            tied.add(bid);
            return new Highest(tied);
        }
    }

    private Q7() {}

    static void build(StreamsBuilder builder, Topics topics, Duration grace) {
        Duration size = Nexmark.WINDOW_SIZE;
        topics.bids(builder)
                .groupBy((key, bid) -> ALL, Grouped.with("q7-one-group", Serdes.String(), Bid.SERDE))
                .windowedBy(TimeWindows.ofSizeAndGrace(size, grace))
                .aggregate(() -> Highest.NONE, (all, bid, highest) -> highest.add(bid),
                        Named.as("q7-max"),
                        Materialized.<String, Highest, WindowStore<Bytes, byte[]>>as("q7-highest")
                                .withKeySerde(Serdes.String())
                                .withValueSerde(Highest.SERDE))
                .suppress(Suppressed.untilWindowCloses(BufferConfig.unbounded()).withName("q7-final"))
                .toStream(Named.as("q7-highest-bids"))
                .map((window, highest) -> KeyValue.pair((Void) null, highestBids(window.window().start(), size, highest)),
                        Named.as("q7-result"))
                .to(topics.output(), Produced.with(Serdes.Void(), HighestBids.SERDE).withName("q7-out"));
    }

    private static HighestBids highestBids(long windowStart, Duration size, Highest highest) {
        List<Bid> bids = new ArrayList<>(highest.bids());
        bids.sort(ORDER);
        return new HighestBids(windowStart, windowStart + size.toMillis(), bids.get(0).price(), bids);
    }
}
