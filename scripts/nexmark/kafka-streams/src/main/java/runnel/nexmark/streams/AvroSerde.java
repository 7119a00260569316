package runnel.nexmark.streams;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Map;

import org.apache.avro.Schema;
import org.apache.avro.io.BinaryDecoder;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.DecoderFactory;
import org.apache.avro.io.EncoderFactory;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serializer;

/**
 * A serde for plain Avro binary: the encoding of the value alone, with no magic byte, schema
 * id or container header, as Runnel writes its topics (docs/wire-format.md).
 *
 * <p>Values are read and written field by field by code written against {@link #schema()}
 * rather than through {@code GenericRecord}: no reflection, no intermediate objects, and the
 * decoder and encoder are reused. Kafka Streams shares one serde instance between its stream
 * threads, so the reused decoder and buffer are per thread.
 */
final class AvroSerde<T> implements Serde<T>, Serializer<T>, Deserializer<T> {

    /** Reads one value, field by field in schema order. */
    @FunctionalInterface
    interface Reader<T> {
        T read(BinaryDecoder in) throws IOException;
    }

    /** Writes one value, field by field in schema order. */
    @FunctionalInterface
    interface Writer<T> {
        void write(T value, BinaryEncoder out) throws IOException;
    }

    /** A thread's encoder and the buffer it writes to. */
    private static final class Output {
        final ByteArrayOutputStream bytes = new ByteArrayOutputStream(256);
        final BinaryEncoder encoder = EncoderFactory.get().binaryEncoder(bytes, null);
    }

    private static final ThreadLocal<BinaryDecoder> DECODER = new ThreadLocal<>();
    private static final ThreadLocal<Output> OUTPUT = ThreadLocal.withInitial(Output::new);

    private final Schema schema;
    private final Reader<T> reader;
    private final Writer<T> writer;

    private AvroSerde(Schema schema, Reader<T> reader, Writer<T> writer) {
        this.schema = schema;
        this.reader = reader;
        this.writer = writer;
    }

    /** A serde for values of {@code schema}, read and written by the given code. */
    static <T> AvroSerde<T> of(String schema, Reader<T> reader, Writer<T> writer) {
        return new AvroSerde<>(new Schema.Parser().parse(schema), reader, writer);
    }

    /** The schema the values are written with. */
    Schema schema() {
        return schema;
    }

    @Override
    public byte[] serialize(String topic, T value) {
        if (value == null) {
            return null;
        }
        Output output = OUTPUT.get();
        output.bytes.reset();
        try {
            writer.write(value, output.encoder);
            output.encoder.flush();
        } catch (IOException e) {
            throw new UncheckedIOException(e); // a ByteArrayOutputStream does not fail
        }
        return output.bytes.toByteArray();
    }

    @Override
    public T deserialize(String topic, byte[] data) {
        if (data == null) {
            return null;
        }
        BinaryDecoder in = DecoderFactory.get().binaryDecoder(data, DECODER.get());
        DECODER.set(in);
        try {
            T value = reader.read(in);
            // Bytes left over mean the writer used another schema: fail rather than guess.
            if (!in.isEnd()) {
                throw new SerializationException(
                        "a " + schema.getName() + " in " + topic + " has trailing bytes");
            }
            return value;
        } catch (IOException e) {
            throw new SerializationException(
                    "a value in " + topic + " is not a " + schema.getName() + " in Avro binary", e);
        }
    }

    @Override
    public Serializer<T> serializer() {
        return this;
    }

    @Override
    public Deserializer<T> deserializer() {
        return this;
    }

    @Override
    public void configure(Map<String, ?> configs, boolean isKey) {}

    @Override
    public void close() {}
}
