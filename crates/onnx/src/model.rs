//! [`Model`]: an ONNX model loaded with tract, checked against what the scorer feeds it and
//! expects back, ready to score batches.

use std::fmt;
use std::sync::Arc;

use tract_onnx::prelude::*;
use tract_onnx::tract_hir::infer::{Factoid, ShapeFactoid};

use crate::{ModelError, ModelRecord};

type Plan = Arc<TypedRunnableModel>;

/// A model that loaded, fits the scorer and scored a probe input: ready to score.
///
/// ```no_run
/// use runnel_onnx::{Model, ModelRecord};
/// let record = ModelRecord {
///     name: "fraud".into(),
///     version: "1".into(),
///     onnx: std::fs::read("model.onnx").unwrap().into(),
///     input_shape: vec![-1, 3],
///     output_shape: vec![-1, 2],
/// };
/// let model = Model::load(&record, 3, 2).unwrap();
/// // Two records of three features each: two rows of two probabilities back.
/// let scores = model.score(&[0.1, 0.2, 0.3, 1.0, 2.0, 3.0]).unwrap();
/// assert_eq!(scores.len(), 4);
/// ```
#[derive(Clone)]
pub struct Model {
    name: String,
    version: String,
    plan: Plan,
    /// The input's dimensions after the batch dimension.
    record_dims: Vec<usize>,
    /// Which of the model's outputs is scored with.
    output: usize,
    features: usize,
    outputs: usize,
}

impl Model {
    /// Loads the model of `record` and checks it: its bytes are an ONNX model tract can
    /// run, the record's shapes say `features` values in and `outputs` values out per
    /// record, the model's own input shape agrees, it has a float output of the record's
    /// output shape, and it scores a probe input (two records of zeros) to finite values of
    /// that shape.
    ///
    /// # Errors
    ///
    /// A [`ModelError`] saying which check failed.
    pub fn load(
        record: &ModelRecord,
        features: usize,
        outputs: usize,
    ) -> Result<Model, ModelError> {
        let record_dims = record_dims(&record.input_shape, features)?;
        check_output_shape(&record.output_shape, outputs)?;
        let unreadable = |error: TractError| ModelError::Unreadable {
            reason: format!("{error:#}"),
        };
        let mut model = tract_onnx::onnx()
            .model_for_read(&mut record.onnx.as_bytes())
            .map_err(unreadable)?;
        let inputs = model.input_outlets().map_err(unreadable)?.len();
        if inputs != 1 {
            return Err(ModelError::Inputs { inputs });
        }
        check_declared_input(
            &model.input_fact(0).map_err(unreadable)?.shape,
            &record.input_shape,
        )?;
        let batch = model.sym("batch");
        let mut shape: TVec<TDim> = tvec![batch.to_dim()];
        shape.extend(record_dims.iter().map(|dim| dim.to_dim()));
        model
            .set_input_fact(0, f32::fact(shape).into())
            .map_err(unreadable)?;
        let typed = model.into_optimized().map_err(unreadable)?;
        let output = find_output(&typed, &record.output_shape)?;
        let plan = typed.into_runnable().map_err(unreadable)?;
        let model = Model {
            name: record.name.clone(),
            version: record.version.clone(),
            plan,
            record_dims,
            output,
            features,
            outputs,
        };
        let probe = model
            .score(&vec![0.0; 2 * features])
            .map_err(|error| ModelError::Probe {
                reason: error.to_string(),
            })?;
        if let Some(value) = probe.iter().find(|value| !value.is_finite()) {
            return Err(ModelError::Probe {
                reason: format!("it scored a probe input of zeros to {value}"),
            });
        }
        Ok(model)
    }

    /// The model's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The model's version.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// `name@version`.
    pub fn label(&self) -> String {
        format!("{}@{}", self.name, self.version)
    }

    /// Scores a batch: `rows` holds the features of each record one after another; the
    /// result holds the output values of each record one after another.
    ///
    /// # Errors
    ///
    /// [`ModelError::Features`] when `rows` is not whole records; [`ModelError::Scoring`]
    /// when the model fails or gives a result of another shape.
    pub fn score(&self, rows: &[f32]) -> Result<Vec<f32>, ModelError> {
        if !rows.len().is_multiple_of(self.features) {
            return Err(ModelError::Features {
                expected: self.features,
                got: rows.len() % self.features,
            });
        }
        let records = rows.len() / self.features;
        let mut shape = vec![records];
        shape.extend(&self.record_dims);
        let failed = |error: TractError| ModelError::Scoring {
            reason: format!("{error:#}"),
        };
        let input = Tensor::from_shape(&shape, rows).map_err(failed)?;
        let results = self.plan.run(tvec![input.into()]).map_err(failed)?;
        let view = results[self.output].try_as_plain_ram().map_err(failed)?;
        let result = view.as_slice::<f32>().map_err(failed)?;
        if result.len() != records * self.outputs {
            return Err(ModelError::Scoring {
                reason: format!(
                    "it gave {} values for {records} records of {} outputs",
                    result.len(),
                    self.outputs
                ),
            });
        }
        Ok(result.to_vec())
    }
}

impl fmt::Debug for Model {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Model")
            .field("name", &self.name)
            .field("version", &self.version)
            .field("features", &self.features)
            .field("outputs", &self.outputs)
            .finish_non_exhaustive()
    }
}

/// The dimensions after the batch dimension that `input_shape` gives, if they hold
/// `features` values per record.
fn record_dims(input_shape: &[i64], features: usize) -> Result<Vec<usize>, ModelError> {
    let mismatch = || ModelError::InputShape {
        record: input_shape.to_vec(),
        features,
    };
    let Some((_, rest)) = input_shape.split_first() else {
        return Err(mismatch());
    };
    let dims: Vec<usize> = rest
        .iter()
        .map(|dim| usize::try_from(*dim).ok().filter(|dim| *dim > 0))
        .collect::<Option<_>>()
        .ok_or_else(mismatch)?;
    if dims.iter().product::<usize>() == features {
        Ok(dims)
    } else {
        Err(mismatch())
    }
}

fn check_output_shape(output_shape: &[i64], outputs: usize) -> Result<(), ModelError> {
    let per_record: Option<usize> = output_shape
        .iter()
        .skip(1)
        .map(|dim| usize::try_from(*dim).ok())
        .product();
    if output_shape.is_empty() || per_record != Some(outputs) {
        return Err(ModelError::OutputShape {
            record: output_shape.to_vec(),
            outputs,
        });
    }
    Ok(())
}

/// Checks the model's own input shape against the record's, where both are known.
fn check_declared_input(declared: &ShapeFactoid, record: &[i64]) -> Result<(), ModelError> {
    let dims: Vec<Option<i64>> = declared
        .dims()
        .map(|dim| dim.concretize().and_then(|dim| dim.to_i64().ok()))
        .collect();
    let rank_known = !declared.is_open();
    let fits = (!rank_known || dims.len() == record.len())
        && dims
            .iter()
            .zip(record)
            .skip(1)
            .all(|(model, record)| model.is_none_or(|model| model == *record));
    if fits {
        Ok(())
    } else {
        Err(ModelError::DeclaredInput {
            model: shape_text(&dims),
            record: record.to_vec(),
        })
    }
}

/// The index of the first float output whose shape fits `output_shape`.
fn find_output(model: &TypedModel, output_shape: &[i64]) -> Result<usize, ModelError> {
    let mut seen = Vec::new();
    for (index, outlet) in model
        .output_outlets()
        .map_err(|error| ModelError::Unreadable {
            reason: format!("{error:#}"),
        })?
        .iter()
        .enumerate()
    {
        let Ok(fact) = model.outlet_fact(*outlet) else {
            continue;
        };
        let dims: Vec<Option<i64>> = fact.shape.iter().map(|dim| dim.to_i64().ok()).collect();
        let fits = fact.datum_type == f32::datum_type()
            && dims.len() == output_shape.len()
            && dims
                .iter()
                .zip(output_shape)
                .skip(1)
                .all(|(model, wanted)| *wanted == -1 || *model == Some(*wanted));
        if fits {
            return Ok(index);
        }
        let name = model.outlet_label(*outlet).unwrap_or("?");
        seen.push(format!(
            "{name} {:?} {}",
            fact.datum_type,
            shape_text(&dims)
        ));
    }
    Err(ModelError::NoOutput {
        wanted: output_shape.to_vec(),
        outputs: seen.join(", "),
    })
}

fn shape_text(dims: &[Option<i64>]) -> String {
    let dims: Vec<String> = dims
        .iter()
        .map(|dim| dim.map_or_else(|| "?".to_owned(), |dim| dim.to_string()))
        .collect();
    format!("[{}]", dims.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_shapes_must_hold_the_scorers_features_and_outputs() {
        assert_eq!(record_dims(&[-1, 7], 7).unwrap(), [7]);
        assert_eq!(record_dims(&[-1, 2, 3], 6).unwrap(), [2, 3]);
        assert!(matches!(
            record_dims(&[-1, 5], 7),
            Err(ModelError::InputShape { .. })
        ));
        assert!(record_dims(&[-1, -1], 7).is_err());
        assert!(record_dims(&[], 7).is_err());
        assert!(check_output_shape(&[-1, 2], 2).is_ok());
        assert!(check_output_shape(&[-1], 1).is_ok());
        assert!(check_output_shape(&[-1, 3], 2).is_err());
        assert!(check_output_shape(&[-1, -1], 2).is_err());
    }
}
