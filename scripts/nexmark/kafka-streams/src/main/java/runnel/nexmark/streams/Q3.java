package runnel.nexmark.streams;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

import org.apache.avro.io.BinaryDecoder;
import org.apache.avro.io.BinaryEncoder;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Repartitioned;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.ProcessorSupplier;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.Stores;

/**
 * Query 3, local item suggestion: for every auction in category 10 whose seller lives in OR,
 * ID or CA, the seller's name, city and state and the auction's id.
 *
 * <p>An incremental, unwindowed join of persons and auctions on seller = person id, as Flink's
 * regular join and Runnel's q3: both streams are keyed by person id, merged and repartitioned
 * once, so that one task sees a person and all their auctions, and a processor joins them in
 * keyed state. As in Runnel, every person is kept (those in the three states with their
 * details, the others as a marker, so that their auctions are dropped at once), and an auction
 * whose seller has not registered yet (the generator names sellers up to 10 persons ahead)
 * waits for them. The state grows with the number of persons, as Flink's join state does.
 *
 * <p>A DSL stream-table join would drop auctions that come before their seller, and a
 * foreign-key table-table join would also keep every auction; hence the processor.
 */
final class Q3 {

    static final long CATEGORY = 10;
    static final Set<String> STATES = Set.of("OR", "ID", "CA");

    private static final String SELLERS = "q3-sellers";
    private static final String WAITING = "q3-waiting-auctions";

    /** A seller in one of the states with an auction in the category (Runnel's schema). */
    record NameCityStateId(String name, String city, String state, long id, long dateTime) {

        static final AvroSerde<NameCityStateId> SERDE = AvroSerde.of("""
                {"type": "record", "name": "NameCityStateId", "fields": [
                  {"name": "name", "type": "string"},
                  {"name": "city", "type": "string"},
                  {"name": "state", "type": "string"},
                  {"name": "id", "type": "long"},
                  {"name": "date_time", "type": "long"}
                ]}""", NameCityStateId::read, NameCityStateId::write);

        static NameCityStateId read(BinaryDecoder in) throws IOException {
            return new NameCityStateId(in.readString(), in.readString(), in.readString(), in.readLong(),
                    in.readLong());
        }

        static void write(NameCityStateId value, BinaryEncoder out) throws IOException {
            out.writeString(value.name);
            out.writeString(value.city);
            out.writeString(value.state);
            out.writeLong(value.id);
            out.writeLong(value.dateTime);
        }
    }

    /** What the join learns, keyed by person id: a person registered, or opened an auction. */
    sealed interface SellerEvent permits Seller, OpenedAuction {

        /** Avro union [Seller, OpenedAuction]. */
        AvroSerde<SellerEvent> SERDE = AvroSerde.of("""
                [{"type": "record", "name": "Seller", "fields": [
                   {"name": "local", "type": "boolean"},
                   {"name": "name", "type": "string"},
                   {"name": "city", "type": "string"},
                   {"name": "state", "type": "string"}
                 ]},
                 {"type": "record", "name": "OpenedAuction", "fields": [
                   {"name": "id", "type": "long"},
                   {"name": "date_time", "type": "long"}
                 ]}]""", SellerEvent::read, SellerEvent::write);

        static SellerEvent read(BinaryDecoder in) throws IOException {
            return in.readIndex() == 0 ? Seller.read(in) : OpenedAuction.read(in);
        }

        static void write(SellerEvent event, BinaryEncoder out) throws IOException {
            if (event instanceof Seller seller) {
                out.writeIndex(0);
                Seller.write(seller, out);
            } else {
                out.writeIndex(1);
                OpenedAuction.write((OpenedAuction) event, out);
            }
        }
    }

    /** A person: {@code local} with their details when in one of the states. */
    record Seller(boolean local, String name, String city, String state) implements SellerEvent {

        /** A person elsewhere: only the fact that they registered matters. */
        static final Seller ELSEWHERE = new Seller(false, "", "", "");

        static final AvroSerde<Seller> SERDE = AvroSerde.of("""
                {"type": "record", "name": "Seller", "fields": [
                  {"name": "local", "type": "boolean"},
                  {"name": "name", "type": "string"},
                  {"name": "city", "type": "string"},
                  {"name": "state", "type": "string"}
                ]}""", Seller::read, Seller::write);

        static Seller of(Person person) {
            return STATES.contains(person.state())
                    ? new Seller(true, person.name(), person.city(), person.state())
                    : ELSEWHERE;
        }

        static Seller read(BinaryDecoder in) throws IOException {
            return new Seller(in.readBoolean(), in.readString(), in.readString(), in.readString());
        }

        static void write(Seller seller, BinaryEncoder out) throws IOException {
            out.writeBoolean(seller.local);
            out.writeString(seller.name);
            out.writeString(seller.city);
            out.writeString(seller.state);
        }
    }

    /** An auction in the category: its id and time. */
    record OpenedAuction(long id, long dateTime) implements SellerEvent {

        /** The auctions waiting for one seller, in arrival order. */
        static final AvroSerde<List<OpenedAuction>> LIST_SERDE = AvroSerde.of("""
                {"type": "array", "items": {"type": "record", "name": "OpenedAuction", "fields": [
                  {"name": "id", "type": "long"},
                  {"name": "date_time", "type": "long"}
                ]}}""", OpenedAuction::readList, OpenedAuction::writeList);

        static OpenedAuction read(BinaryDecoder in) throws IOException {
            return new OpenedAuction(in.readLong(), in.readLong());
        }

        static void write(OpenedAuction auction, BinaryEncoder out) throws IOException {
            out.writeLong(auction.id);
            out.writeLong(auction.dateTime);
        }

        static List<OpenedAuction> readList(BinaryDecoder in) throws IOException {
            return Avro.readArray(in, OpenedAuction::read);
        }

        static void writeList(List<OpenedAuction> auctions, BinaryEncoder out) throws IOException {
            Avro.writeArray(auctions, out, OpenedAuction::write);
        }
    }

    private Q3() {}

    static void build(StreamsBuilder builder, Topics topics) {
        KStream<Long, SellerEvent> persons = topics.persons(builder)
                .map((key, person) -> KeyValue.pair(person.id(), (SellerEvent) Seller.of(person)),
                        Named.as("q3-person-by-id"));
        KStream<Long, SellerEvent> auctions = topics.auctions(builder)
                .filter((key, auction) -> auction.category() == CATEGORY, Named.as("q3-category"))
                .map((key, auction) -> KeyValue.pair(auction.seller(),
                                (SellerEvent) new OpenedAuction(auction.id(), auction.dateTime())),
                        Named.as("q3-auction-by-seller"));
        persons.merge(auctions, Named.as("q3-merge"))
                .repartition(Repartitioned.<Long, SellerEvent>as("q3-by-seller")
                        .withKeySerde(Serdes.Long())
                        .withValueSerde(SellerEvent.SERDE))
                .process(new LocalItems(), Named.as("q3-join"))
                .to(topics.output(), Produced.with(Serdes.Void(), NameCityStateId.SERDE).withName("q3-out"));
    }

    /** The join: its stores and, per task, a processor over them. */
    static final class LocalItems implements ProcessorSupplier<Long, SellerEvent, Void, NameCityStateId> {

        @Override
        public Set<StoreBuilder<?>> stores() {
            // Cached, so that an auction's short wait does not reach RocksDB and the changelog.
            return Set.of(
                    Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore(SELLERS),
                            Serdes.Long(), Seller.SERDE).withCachingEnabled(),
                    Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore(WAITING),
                            Serdes.Long(), OpenedAuction.LIST_SERDE).withCachingEnabled());
        }

        @Override
        public Processor<Long, SellerEvent, Void, NameCityStateId> get() {
            return new Processor<>() {
                private ProcessorContext<Void, NameCityStateId> context;
                private KeyValueStore<Long, Seller> sellers;
                private KeyValueStore<Long, List<OpenedAuction>> waiting;

                @Override
                public void init(ProcessorContext<Void, NameCityStateId> context) {
                    this.context = context;
                    this.sellers = context.getStateStore(SELLERS);
                    this.waiting = context.getStateStore(WAITING);
                }

                @Override
                public void process(Record<Long, SellerEvent> record) {
                    long person = record.key();
                    if (record.value() instanceof Seller seller) {
                        sellers.put(person, seller);
                        List<OpenedAuction> auctions = waiting.get(person);
                        if (auctions != null) {
                            waiting.delete(person);
                            if (seller.local()) {
                                auctions.forEach(auction -> suggest(seller, auction));
                            }
                        }
                    } else if (record.value() instanceof OpenedAuction auction) {
                        Seller seller = sellers.get(person);
                        if (seller == null) {
                            List<OpenedAuction> auctions = waiting.get(person);
                            if (auctions == null) {
                                auctions = new ArrayList<>(1);
                            }
                            auctions.add(auction);
                            waiting.put(person, auctions);
                        } else if (seller.local()) {
                            suggest(seller, auction);
                        }
                    }
                }

                /** Emits a match, stamped with the auction's time as Runnel's. */
                private void suggest(Seller seller, OpenedAuction auction) {
                    context.forward(new Record<>(null,
                            new NameCityStateId(seller.name(), seller.city(), seller.state(), auction.id(),
                                    auction.dateTime()),
                            auction.dateTime()));
                }
            };
        }
    }
}
