//! The attributes an app writes its record types and tests with, re-exported by `runnel`
//! (use them as `runnel::record`, `runnel::serializable` and `runnel::test`, or from
//! `runnel::prelude`).
//!
//! Each expands to the serde, apache-avro or tokio attribute it stands for, pointed at the
//! copies `runnel` re-exports, so an app depends on `runnel` alone. The expansion names
//! `::runnel`, so these attributes work only in crates that depend on `runnel`; its own
//! documentation shows them in use.

use proc_macro::TokenStream;
use proc_macro2::TokenStream as Tokens;
use quote::quote;

/// A record type: a value that travels on an inlet or outlet, encoded as Avro (its schema
/// derived from the type) or JSON.
///
/// Derives `Serialize`, `Deserialize` and `AvroSchema` through `runnel`'s re-exports. The
/// Avro derive names `apache_avro`, which `use runnel::prelude::*` brings into scope. Field
/// attributes (`#[serde(...)]`, `#[avro(...)]`) work as under the plain derives; add the
/// other derives (`Debug`, `Clone`, ...) as usual.
#[proc_macro_attribute]
pub fn record(arguments: TokenStream, item: TokenStream) -> TokenStream {
    expand(arguments, item, "record", |item| {
        quote! {
            #[derive(
                ::runnel::serde::Serialize,
                ::runnel::serde::Deserialize,
                ::runnel::apache_avro::AvroSchema
            )]
            #[serde(crate = "::runnel::serde")]
            #item
        }
    })
}

/// A type saved with serde but never put on a port: checkpointed state, a configuration
/// value, a JSON body. Derives `Serialize` and `Deserialize` through `runnel`'s re-export.
#[proc_macro_attribute]
pub fn serializable(arguments: TokenStream, item: TokenStream) -> TokenStream {
    expand(arguments, item, "serializable", |item| {
        quote! {
            #[derive(::runnel::serde::Serialize, ::runnel::serde::Deserialize)]
            #[serde(crate = "::runnel::serde")]
            #item
        }
    })
}

/// An async test on the runtime streamlets run on: `#[tokio::test]` through `runnel`'s
/// re-export of tokio. Its arguments are tokio's (`flavor = "multi_thread"`,
/// `start_paused = true`, ...).
#[proc_macro_attribute]
pub fn test(arguments: TokenStream, item: TokenStream) -> TokenStream {
    let arguments = Tokens::from(arguments);
    let separator = (!arguments.is_empty()).then(|| quote!(,));
    let item = Tokens::from(item);
    quote! {
        #[::runnel::tokio::test(#arguments #separator crate = "::runnel::tokio")]
        #item
    }
    .into()
}

/// `item` with the attributes `derive` puts on it, or an error at the arguments `name`
/// does not take.
fn expand(
    arguments: TokenStream,
    item: TokenStream,
    name: &str,
    derive: impl FnOnce(Tokens) -> Tokens,
) -> TokenStream {
    let arguments = Tokens::from(arguments);
    if !arguments.is_empty() {
        let message = format!("#[{name}] takes no arguments");
        return syn::Error::new_spanned(arguments, message)
            .to_compile_error()
            .into();
    }
    let item = Tokens::from(item);
    if let Err(error) = syn::parse2::<syn::DeriveInput>(item.clone()) {
        let message = format!("#[{name}] goes on a struct or an enum: {error}");
        return syn::Error::new(error.span(), message)
            .to_compile_error()
            .into();
    }
    derive(item).into()
}
