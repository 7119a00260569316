package runnel.nexmark.streams;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

import org.apache.avro.io.BinaryDecoder;
import org.apache.avro.io.BinaryEncoder;

/** Avro arrays, for the hand-written codecs. */
final class Avro {

    private Avro() {}

    static <T> List<T> readArray(BinaryDecoder in, AvroSerde.Reader<T> reader) throws IOException {
        long n = in.readArrayStart();
        List<T> items = new ArrayList<>((int) Math.min(n, 1024));
        for (; n != 0; n = in.arrayNext()) {
            for (long i = 0; i < n; i++) {
                items.add(reader.read(in));
            }
        }
        return items;
    }

    static <T> void writeArray(List<T> items, BinaryEncoder out, AvroSerde.Writer<T> writer) throws IOException {
        out.writeArrayStart();
        out.setItemCount(items.size());
        for (T item : items) {
            out.startItem();
            writer.write(item, out);
        }
        out.writeArrayEnd();
    }

    static List<Long> readLongs(BinaryDecoder in) throws IOException {
        return readArray(in, BinaryDecoder::readLong);
    }

    static void writeLongs(List<Long> items, BinaryEncoder out) throws IOException {
        writeArray(items, out, (item, encoder) -> encoder.writeLong(item));
    }
}
