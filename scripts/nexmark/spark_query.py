"""Runs one Nexmark query on PySpark Structured Streaming (local[PARALLELISM]) over a
directory holding a JSON-lines events file, into the `noop` sink, and exits when the input
is done (trigger availableNow).

    python spark_query.py QUERY EVENTS_DIRECTORY [PARALLELISM]

Queries Spark cannot run as a stream (joins after aggregations, chained aggregations in
append mode) fail with Spark's own AnalysisException, which the harness reports as
unsupported.
"""

import os
import sys
import tempfile

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType


def fields(*names):
    return StructType([StructField(name, StringType() if kind == "s" else LongType())
                       for name, kind in (n.split(":") for n in names)])


PERSON = fields("id:l", "name:s", "email_address:s", "credit_card:s", "city:s", "state:s",
                "date_time:l", "extra:s")
AUCTION = fields("id:l", "item_name:s", "description:s", "initial_bid:l", "reserve:l",
                 "date_time:l", "expires:l", "seller:l", "category:l", "extra:s")
BID = fields("auction:l", "bidder:l", "price:l", "date_time:l", "extra:s")
EVENT = StructType([StructField("event_type", LongType()), StructField("person", PERSON),
                    StructField("auction", AUCTION), StructField("bid", BID)])


def streams(spark, directory):
    events = spark.readStream.schema(EVENT).json(directory)

    def of(kind, column):
        frame = events.where(F.col("event_type") == kind).select(f"{column}.*")
        frame = frame.withColumn("event_time", F.timestamp_millis("date_time"))
        return frame.withWatermark("event_time", "1 second")

    return of(0, "person"), of(1, "auction"), of(2, "bid")


def query(name, person, auction, bid):
    if name == "q0":
        return bid.select("auction", "bidder", "price", "event_time", "extra")
    if name == "q1":
        return bid.select("auction", "bidder", (F.col("price") * 89 / 100).cast("long"),
                          "event_time", "extra")
    if name == "q2":
        return bid.where(F.col("auction") % 123 == 0).select("auction", "price")
    if name == "q3":
        sellers = person.where(F.col("state").isin("OR", "ID", "CA"))
        auctions = auction.where(F.col("category") == 10)
        joined = auctions.join(sellers, auctions.seller == sellers.id)
        return joined.select(sellers.name, sellers.city, sellers.state, auctions.id)
    if name == "q5":
        counts = bid.groupBy(F.window("event_time", "10 seconds", "5 seconds"), "auction").count()
        top = counts.groupBy("window").agg(F.max("count").alias("maxn"))
        return counts.join(top, "window").where(F.col("count") >= F.col("maxn"))
    if name == "q7":
        highest = bid.groupBy(F.window("event_time", "10 seconds")).agg(F.max("price").alias("maxprice"))
        return bid.join(highest, (bid.price == highest.maxprice)
                        & (bid.event_time >= highest.window.start)
                        & (bid.event_time < highest.window.end))
    if name == "q8":
        persons = person.groupBy(F.window("event_time", "10 seconds"), "id", "name").count()
        sellers = auction.groupBy(F.window("event_time", "10 seconds"), "seller").count()
        return persons.join(sellers, (persons.id == sellers.seller)
                            & (persons.window == sellers.window)).select("id", "name", persons.window)
    if name == "q9":
        raise NotImplementedError("q9 needs a top-1 per key (ROW_NUMBER) over a join, which "
                                  "Structured Streaming does not run as a stream")
    if name == "q11":
        return bid.groupBy(F.session_window("event_time", "10 seconds"), "bidder").count()
    raise SystemExit(f"unknown query {name}")


def main():
    name, directory = sys.argv[1], sys.argv[2]
    parallelism = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    spark = (SparkSession.builder.master(f"local[{parallelism}]")
             .appName(f"nexmark-{name}")
             .config("spark.sql.shuffle.partitions", str(parallelism))
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.streaming.statefulOperator.checkCorrectness.enabled", "false")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    person, auction, bid = streams(spark, directory)
    result = query(name, person, auction, bid)
    with tempfile.TemporaryDirectory() as checkpoints:
        run = (result.writeStream.format("noop").outputMode("append")
               .option("checkpointLocation", os.path.join(checkpoints, "c"))
               .trigger(availableNow=True).start())
        run.awaitTermination()
    spark.stop()


if __name__ == "__main__":
    main()
