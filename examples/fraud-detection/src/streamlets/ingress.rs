//! `http-ingress`, `http-lines-ingress` and `model-ingress`: transactions and models POSTed
//! over HTTP.

use runnel::http::{HttpIngress, Invalid};
use runnel::onnx::ModelRecord;
use runnel::prelude::*;

use crate::model::Transaction;

/// Transactions, keyed by card so each card's stay in order.
pub const TRANSACTIONS: Outlet<Transaction> = Outlet::new("out").keyed_by(|t| t.card.clone());
/// Models to serve.
pub const MODELS: Outlet<ModelRecord> = Outlet::new("out");

/// The categories a transaction may have.
pub const CATEGORIES: [&str; 8] = [
    "grocery",
    "fuel",
    "restaurant",
    "online",
    "travel",
    "electronics",
    "jewelry",
    "cash",
];

/// Refuses transactions the app cannot score.
pub fn check(transaction: &Transaction) -> Result<(), Invalid> {
    if transaction.card.is_empty() {
        return Err(Invalid::field("card", "must not be empty"));
    }
    if !(transaction.amount.is_finite() && transaction.amount > 0.0) {
        return Err(Invalid::field("amount", "must be a positive number"));
    }
    if !CATEGORIES.contains(&transaction.category.as_str()) {
        return Err(Invalid::field(
            "category",
            format!(
                "'{}' is not one of {}",
                transaction.category,
                CATEGORIES.join(", ")
            ),
        ));
    }
    Ok(())
}

/// One transaction per `POST /`.
pub fn transactions() -> impl Streamlet {
    HttpIngress::new(TRANSACTIONS)
        .validate(check)
        .describe("card transactions POSTed as JSON, one per request")
}

/// Transactions as newline-delimited JSON, many per `POST /`.
pub fn transaction_lines() -> impl Streamlet {
    HttpIngress::lines(TRANSACTIONS)
        .validate(check)
        .describe("card transactions POSTed as newline-delimited JSON")
}

/// Models POSTed as JSON: name, version, base64 ONNX bytes, input and output shapes.
pub fn models() -> impl Streamlet {
    HttpIngress::new(MODELS)
        .validate(|model| {
            if model.name.is_empty() {
                Err(Invalid::field("name", "must not be empty"))
            } else if model.version.is_empty() {
                Err(Invalid::field("version", "must not be empty"))
            } else {
                Ok(())
            }
        })
        .describe("models POSTed as JSON (ONNX bytes in base64), to be served by the scorer")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transactions_need_a_card_a_positive_amount_and_a_known_category() {
        let mut transaction = Transaction {
            id: "t-1".into(),
            card: "card-0001".into(),
            merchant: "fuel-01".into(),
            category: "fuel".into(),
            amount: 42.0,
            timestamp: 1_700_000_000_000,
        };
        assert_eq!(check(&transaction), Ok(()));
        transaction.category = "casino".into();
        assert_eq!(
            check(&transaction).unwrap_err().field_path(),
            Some("category")
        );
        transaction.category = "fuel".into();
        transaction.amount = -1.0;
        assert_eq!(
            check(&transaction).unwrap_err().to_string(),
            "field 'amount': must be a positive number"
        );
    }
}
