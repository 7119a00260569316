use runnel_runtime::Metric;

#[test]
fn the_metrics_page_lists_every_metric_with_its_type_and_labels() {
    let page = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/metrics.md"
    ))
    .unwrap();
    for metric in Metric::ALL {
        let row = page
            .lines()
            .find(|line| line.starts_with(&format!("| `{}` |", metric.name())))
            .unwrap_or_else(|| panic!("docs/metrics.md has no row for {}", metric.name()));
        assert!(row.contains(&format!("| {} |", metric.kind())), "{row}");
        for label in metric.labels() {
            assert!(
                row.contains(&format!("`{label}`")),
                "{row} lacks label {label}"
            );
        }
    }
}
