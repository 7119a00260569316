package runnel.nexmark.streams;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
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
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.processor.api.ContextualProcessor;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.WindowStore;

/**
 * Query 5, hot items: per sliding window of 10 s starting every 5 s, the auctions with the
 * most bids (all of them when several tie) and how many bids that is.
 *
 * <p>Two windowed aggregations, as Flink's plan: bids counted per auction and hopping window,
 * then the final counts of each window brought together under the window's start and reduced
 * to the maximum, emitted once when the window closes.
 *
 * <p>The second stage closes a window on its own stream time, which the first stage's tasks
 * drive as they emit later windows: nothing tells it that every first-stage task has emitted
 * the window (Kafka Streams has no watermarks). A task that lags the others by d in event
 * time emits a window's counts when they have emitted windows up to about d plus one period
 * later, so the second stage's grace is the first's plus a window.
 */
final class Q5 {

    /** Counts only need a non-null value: the bid itself is not repartitioned. */
    private static final byte[] NOTHING = new byte[0];

    /** The auctions with the most bids in a window (Runnel's {@code HotItems} with its window). */
    record HotItems(long windowStart, long windowEnd, List<Long> auctions, long bids) {

        static final AvroSerde<HotItems> SERDE = AvroSerde.of("""
                {"type": "record", "name": "HotItems", "fields": [
                  {"name": "window_start", "type": "long"},
                  {"name": "window_end", "type": "long"},
                  {"name": "auctions", "type": {"type": "array", "items": "long"}},
                  {"name": "bids", "type": "long"}
                ]}""", HotItems::read, HotItems::write);

        static HotItems read(BinaryDecoder in) throws IOException {
            return new HotItems(in.readLong(), in.readLong(), Avro.readLongs(in), in.readLong());
        }

        static void write(HotItems value, BinaryEncoder out) throws IOException {
            out.writeLong(value.windowStart);
            out.writeLong(value.windowEnd);
            Avro.writeLongs(value.auctions, out);
            out.writeLong(value.bids);
        }
    }

    /** One auction's count in one window: what the second stage receives. */
    record AuctionCount(long auction, long bids) {

        static final AvroSerde<AuctionCount> SERDE = AvroSerde.of("""
                {"type": "record", "name": "AuctionCount", "fields": [
                  {"name": "auction", "type": "long"},
                  {"name": "bids", "type": "long"}
                ]}""", AuctionCount::read, AuctionCount::write);

        static AuctionCount read(BinaryDecoder in) throws IOException {
            return new AuctionCount(in.readLong(), in.readLong());
        }

        static void write(AuctionCount value, BinaryEncoder out) throws IOException {
            out.writeLong(value.auction);
            out.writeLong(value.bids);
        }
    }

    /** The second stage's accumulator: the highest count so far and the auctions that have it. */
    record Hottest(long bids, List<Long> auctions) {

        static final Hottest NONE = new Hottest(0, List.of());

        static final AvroSerde<Hottest> SERDE = AvroSerde.of("""
                {"type": "record", "name": "Hottest", "fields": [
                  {"name": "bids", "type": "long"},
                  {"name": "auctions", "type": {"type": "array", "items": "long"}}
                ]}""", Hottest::read, Hottest::write);

        static Hottest read(BinaryDecoder in) throws IOException {
            return new Hottest(in.readLong(), Avro.readLongs(in));
        }

        static void write(Hottest value, BinaryEncoder out) throws IOException {
            out.writeLong(value.bids);
            Avro.writeLongs(value.auctions, out);
        }

        Hottest add(AuctionCount count) {
            if (count.bids() < bids) {
                return this;
            }
            List<Long> hottest = new ArrayList<>(count.bids() == bids ? auctions.size() + 1 : 1);
            if (count.bids() == bids) {
                hottest.addAll(auctions);
            }
            hottest.add(count.auction());
            return new Hottest(count.bids(), hottest);
        }
    }

    private Q5() {}

    static void build(StreamsBuilder builder, Topics topics, Duration grace) {
        Duration size = Nexmark.WINDOW_SIZE;
        Duration period = Nexmark.WINDOW_PERIOD;
        topics.bids(builder)
                .map((key, bid) -> KeyValue.pair(bid.auction(), NOTHING), Named.as("q5-auction"))
                .groupByKey(Grouped.with("q5-by-auction", Serdes.Long(), Serdes.ByteArray()))
                .windowedBy(TimeWindows.ofSizeAndGrace(size, grace).advanceBy(period))
                .count(Named.as("q5-count"), Materialized.<Long, Long, WindowStore<Bytes, byte[]>>as("q5-bids-per-auction")
                        .withKeySerde(Serdes.Long())
                        .withValueSerde(Serdes.Long()))
                .suppress(Suppressed.untilWindowCloses(BufferConfig.unbounded()).withName("q5-counts-final"))
                .toStream(Named.as("q5-counts"))
                .process(PerWindow::new, Named.as("q5-per-window"))
                .groupByKey(Grouped.with("q5-by-window", Serdes.Long(), AuctionCount.SERDE))
                // Tumbling windows of one period: the last period of each sliding window holds
                // exactly its counts (stamped with its last millisecond), so one window per key.
                .windowedBy(TimeWindows.ofSizeAndGrace(period, grace.plus(size)))
                .aggregate(() -> Hottest.NONE, (windowStart, count, hottest) -> hottest.add(count),
                        Named.as("q5-max"),
                        Materialized.<Long, Hottest, WindowStore<Bytes, byte[]>>as("q5-hottest")
                                .withKeySerde(Serdes.Long())
                                .withValueSerde(Hottest.SERDE))
                .suppress(Suppressed.untilWindowCloses(BufferConfig.unbounded()).withName("q5-hottest-final"))
                .toStream(Named.as("q5-hot-items"))
                .map((window, hottest) -> KeyValue.pair((Void) null, hotItems(window.key(), size, hottest)),
                        Named.as("q5-result"))
                .to(topics.output(), Produced.with(Serdes.Void(), HotItems.SERDE).withName("q5-out"));
    }

    private static HotItems hotItems(long windowStart, Duration size, Hottest hottest) {
        List<Long> auctions = new ArrayList<>(hottest.auctions());
        auctions.sort(null);
        return new HotItems(windowStart, windowStart + size.toMillis(), auctions, hottest.bids());
    }

    /**
     * Keys each final count by its window's start and stamps it with the window's last
     * millisecond: a count's own timestamp is that of the auction's latest bid in the window.
     */
    private static final class PerWindow extends ContextualProcessor<Windowed<Long>, Long, Long, AuctionCount> {
        @Override
        public void process(Record<Windowed<Long>, Long> record) {
            Windowed<Long> window = record.key();
            context().forward(new Record<>(window.window().start(),
                    new AuctionCount(window.key(), record.value()),
                    window.window().end() - 1));
        }
    }
}
