//! Small ONNX models built in code, so the tests need no files: linear softmax classifiers,
//! and models that are wrong in one way each.

use prost::Message;
use tract_onnx::pb::tensor_proto::DataType;
use tract_onnx::pb::tensor_shape_proto::{Dimension, dimension};
use tract_onnx::pb::type_proto::{Tensor, Value};
use tract_onnx::pb::{
    AttributeProto, GraphProto, ModelProto, NodeProto, OperatorSetIdProto, TensorProto,
    TensorShapeProto, TypeProto, ValueInfoProto,
};

use runnel_onnx::ModelRecord;

/// `softmax(x · weights + bias)`: one row of `weights` per feature, two classes.
pub(crate) fn linear(weights: &[[f32; 2]], bias: [f32; 2]) -> Vec<u8> {
    let features = weights.len() as i64;
    let mut graph = graph(features);
    graph.initializer = vec![
        tensor(
            "w",
            &[features, 2],
            weights.iter().flatten().copied().collect(),
        ),
        tensor("b", &[2], bias.to_vec()),
    ];
    graph.node = vec![
        node("MatMul", &["x", "w"], "xw"),
        node("Add", &["xw", "b"], "logits"),
        softmax("logits", "probabilities"),
    ];
    graph.output = vec![value("probabilities", &[None, Some(2)])];
    model(graph)
}

/// A linear classifier of three features whose first output is its input (float, but
/// three wide) and whose second is the probabilities.
pub(crate) fn two_outputs() -> Vec<u8> {
    let mut graph = graph(3);
    graph.initializer = vec![
        tensor("w", &[3, 2], vec![1.0, -1.0, 0.5, 0.5, -2.0, 2.0]),
        tensor("b", &[2], vec![0.0, 0.0]),
    ];
    graph.node = vec![
        node("Identity", &["x"], "echo"),
        node("MatMul", &["x", "w"], "xw"),
        node("Add", &["xw", "b"], "logits"),
        softmax("logits", "probabilities"),
    ];
    graph.output = vec![
        value("echo", &[None, Some(3)]),
        value("probabilities", &[None, Some(2)]),
    ];
    model(graph)
}

/// `log(x · weights)`: minus infinity for a probe input of zeros.
pub(crate) fn logarithm(features: i64) -> Vec<u8> {
    let mut graph = graph(features);
    graph.initializer = vec![tensor(
        "w",
        &[features, 2],
        vec![1.0; 2 * features as usize],
    )];
    graph.node = vec![
        node("MatMul", &["x", "w"], "xw"),
        node("Log", &["xw"], "out"),
    ];
    graph.output = vec![value("out", &[None, Some(2)])];
    model(graph)
}

/// A record of `onnx` with the shapes a two-feature, two-class scorer expects.
pub(crate) fn record(version: &str, onnx: Vec<u8>) -> ModelRecord {
    ModelRecord {
        name: "points".to_owned(),
        version: version.to_owned(),
        onnx: onnx.into(),
        input_shape: vec![-1, 2],
        output_shape: vec![-1, 2],
    }
}

fn graph(features: i64) -> GraphProto {
    GraphProto {
        name: "test".to_owned(),
        input: vec![value("x", &[None, Some(features)])],
        ..GraphProto::default()
    }
}

fn model(graph: GraphProto) -> Vec<u8> {
    ModelProto {
        ir_version: 8,
        opset_import: vec![OperatorSetIdProto {
            domain: String::new(),
            version: 13,
        }],
        graph: Some(graph),
        ..ModelProto::default()
    }
    .encode_to_vec()
}

fn node(op: &str, inputs: &[&str], output: &str) -> NodeProto {
    NodeProto {
        op_type: op.to_owned(),
        name: output.to_owned(),
        input: inputs.iter().map(|input| (*input).to_owned()).collect(),
        output: vec![output.to_owned()],
        ..NodeProto::default()
    }
}

fn softmax(input: &str, output: &str) -> NodeProto {
    let mut softmax = node("Softmax", &[input], output);
    softmax.attribute = vec![AttributeProto {
        name: "axis".to_owned(),
        r#type: 2, // INT
        i: 1,
        ..AttributeProto::default()
    }];
    softmax
}

fn tensor(name: &str, dims: &[i64], values: Vec<f32>) -> TensorProto {
    TensorProto {
        name: name.to_owned(),
        dims: dims.to_vec(),
        data_type: DataType::Float as i32,
        float_data: values,
        ..TensorProto::default()
    }
}

/// A float tensor value with `None` for a dimension named `batch`.
fn value(name: &str, dims: &[Option<i64>]) -> ValueInfoProto {
    let dim = dims
        .iter()
        .map(|dim| Dimension {
            value: Some(match dim {
                Some(size) => dimension::Value::DimValue(*size),
                None => dimension::Value::DimParam("batch".to_owned()),
            }),
            ..Dimension::default()
        })
        .collect();
    ValueInfoProto {
        name: name.to_owned(),
        r#type: Some(TypeProto {
            value: Some(Value::TensorType(Tensor {
                elem_type: DataType::Float as i32,
                shape: Some(TensorShapeProto { dim }),
            })),
            ..TypeProto::default()
        }),
        ..ValueInfoProto::default()
    }
}
