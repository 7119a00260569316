"""The peer of benches/python_map.rs: the same trivial map (a reading a degree warmer) in
PyFlink's Python DataStream API, parallelism 1, its records generated on the Java side
(the datagen connector) and discarded after the map, so what runs in Python is the map.

    python pyflink_map.py RECORDS

The map runs in PyFlink's default process mode, record at a time (its DataStream API has
no batch form); the results go to a blackhole table (Java). Prints the record count; time
the whole process (JVM start-up included) from outside.
"""

import sys

from pyflink.common import Row, Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.table import StreamTableEnvironment

records = int(sys.argv[1])
environment = StreamExecutionEnvironment.get_execution_environment()
environment.set_parallelism(1)
tables = StreamTableEnvironment.create(environment)
tables.execute_sql(f"""
    CREATE TABLE readings (sensor STRING, celsius DOUBLE) WITH (
        'connector' = 'datagen',
        'number-of-rows' = '{records}',
        'fields.sensor.length' = '9',
        'fields.celsius.min' = '-20', 'fields.celsius.max' = '40'
    )""")
readings = tables.to_data_stream(tables.from_path("readings"))
reading_type = Types.ROW_NAMED(["sensor", "celsius"], [Types.STRING(), Types.DOUBLE()])
warmer = readings.map(lambda reading: Row(sensor=reading[0], celsius=reading[1] + 1.0),
                      output_type=reading_type)
tables.execute_sql("CREATE TABLE discarded (sensor STRING, celsius DOUBLE) WITH ('connector' = 'blackhole')")
tables.from_data_stream(warmer).execute_insert("discarded").wait()
print(records)
