#!/bin/sh
# Publishes an ONNX model to a running fraud-detection app's model ingress:
#   model/publish.sh VERSION FILE [URL]
# e.g.  model/publish.sh 2 model/gbt.onnx
# The model is named "fraud" and takes [-1, 7] features to [-1, 2] probabilities.
set -eu
version=$1
file=$2
url=${3:-http://localhost:3012/}
{
    printf '{"name": "fraud", "version": "%s", "input_shape": [-1, 7], "output_shape": [-1, 2], "onnx": "' "$version"
    base64 < "$file" | tr -d '\n'
    printf '"}'
} | curl --silent --show-error --data-binary @- "$url"
echo
