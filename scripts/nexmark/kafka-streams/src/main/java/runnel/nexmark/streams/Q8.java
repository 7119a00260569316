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
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.Suppressed.BufferConfig;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.state.WindowStore;

/**
 * Query 8, monitor new users: persons who registered and opened an auction in the same
 * tumbling window of 10 s: the person's id and name and the auction's reserve, for each such
 * auction.
 *
 * <p>A window join, done as one windowed aggregation: persons keyed by id and auctions by
 * seller are merged, so that a person and their auctions share a key, and per key and window
 * the aggregate keeps the person's name (if they registered in it) and the reserves of the
 * auctions opened in it. When the window closes, a person with a name yields one result per
 * reserve. A DSL stream-stream join is not this: its windows are relative to each record, not
 * aligned tumbling windows.
 */
final class Q8 {

    /** A person who opened an auction in the window they registered in (Runnel's schema). */
    record NewSeller(long id, String name, long reserve, long windowStart) {

        static final AvroSerde<NewSeller> SERDE = AvroSerde.of("""
                {"type": "record", "name": "NewSeller", "fields": [
                  {"name": "id", "type": "long"},
                  {"name": "name", "type": "string"},
                  {"name": "reserve", "type": "long"},
                  {"name": "window_start", "type": "long"}
                ]}""", NewSeller::read, NewSeller::write);

        static NewSeller read(BinaryDecoder in) throws IOException {
            return new NewSeller(in.readLong(), in.readString(), in.readLong(), in.readLong());
        }

        static void write(NewSeller value, BinaryEncoder out) throws IOException {
            out.writeLong(value.id);
            out.writeString(value.name);
            out.writeLong(value.reserve);
            out.writeLong(value.windowStart);
        }
    }

    /** What a person did, keyed by their id: registered (a name) or opened an auction (a reserve). */
    record Activity(String name, long reserve) {

        /** Avro union [string, long]: the name, or the reserve. */
        static final AvroSerde<Activity> SERDE = AvroSerde.of("""
                ["string", "long"]""", Activity::read, Activity::write);

        static Activity registered(Person person) {
            return new Activity(person.name(), 0);
        }

        static Activity opened(Auction auction) {
            return new Activity(null, auction.reserve());
        }

        static Activity read(BinaryDecoder in) throws IOException {
            return in.readIndex() == 0 ? new Activity(in.readString(), 0) : new Activity(null, in.readLong());
        }

        static void write(Activity value, BinaryEncoder out) throws IOException {
            if (value.name != null) {
                out.writeIndex(0);
                out.writeString(value.name);
            } else {
                out.writeIndex(1);
                out.writeLong(value.reserve);
            }
        }
    }

    /** A person's window: their name if they registered in it, and the reserves of their auctions. */
    record WindowContents(String name, List<Long> reserves) {

        static final WindowContents EMPTY = new WindowContents(null, List.of());

        static final AvroSerde<WindowContents> SERDE = AvroSerde.of("""
                {"type": "record", "name": "WindowContents", "fields": [
                  {"name": "name", "type": ["null", "string"]},
                  {"name": "reserves", "type": {"type": "array", "items": "long"}}
                ]}""", WindowContents::read, WindowContents::write);

        static WindowContents read(BinaryDecoder in) throws IOException {
            String name = in.readIndex() == 0 ? null : in.readString();
            return new WindowContents(name, Avro.readLongs(in));
        }

        static void write(WindowContents value, BinaryEncoder out) throws IOException {
            if (value.name == null) {
                out.writeIndex(0);
                out.writeNull();
            } else {
                out.writeIndex(1);
                out.writeString(value.name);
            }
            Avro.writeLongs(value.reserves, out);
        }

        WindowContents add(Activity activity) {
            if (activity.name() != null) {
                return new WindowContents(activity.name(), reserves);
            }
            List<Long> more = new ArrayList<>(reserves.size() + 1);
            more.addAll(reserves);
            more.add(activity.reserve());
            return new WindowContents(name, more);
        }
    }

    private Q8() {}

    static void build(StreamsBuilder builder, Topics topics, Duration grace) {
        KStream<Long, Activity> persons = topics.persons(builder)
                .map((key, person) -> KeyValue.pair(person.id(), Activity.registered(person)),
                        Named.as("q8-person-by-id"));
        KStream<Long, Activity> auctions = topics.auctions(builder)
                .map((key, auction) -> KeyValue.pair(auction.seller(), Activity.opened(auction)),
                        Named.as("q8-auction-by-seller"));
        persons.merge(auctions, Named.as("q8-merge"))
                .groupByKey(Grouped.with("q8-by-person", Serdes.Long(), Activity.SERDE))
                .windowedBy(TimeWindows.ofSizeAndGrace(Nexmark.WINDOW_SIZE, grace))
                .aggregate(() -> WindowContents.EMPTY, (person, activity, window) -> window.add(activity),
                        Named.as("q8-window"),
                        Materialized.<Long, WindowContents, WindowStore<Bytes, byte[]>>as("q8-windows")
                                .withKeySerde(Serdes.Long())
                                .withValueSerde(WindowContents.SERDE))
                .suppress(Suppressed.untilWindowCloses(BufferConfig.unbounded()).withName("q8-final"))
                .toStream(Named.as("q8-closed"))
                .flatMap((window, contents) -> {
                    List<KeyValue<Void, NewSeller>> sellers = new ArrayList<>(contents.reserves().size());
                    if (contents.name() != null) {
                        for (long reserve : contents.reserves()) {
                            sellers.add(KeyValue.pair(null, new NewSeller(window.key(), contents.name(), reserve,
                                    window.window().start())));
                        }
                    }
                    return sellers;
                }, Named.as("q8-new-sellers"))
                .to(topics.output(), Produced.with(Serdes.Void(), NewSeller.SERDE).withName("q8-out"));
    }
}
