//! Charts where numbers are easier seen than read. A lab describes a chart as data — axes,
//! series of points, reference lines, words in both languages — and the report draws it
//! (`report::chart`: an SVG for slides and the lab book, a table for the text report).
//!
//! The model lives here, apart from the drawing, so a lab procedure can build its charts from
//! its runs without depending on the report.

use crate::lang::Words;
use serde::{Deserialize, Serialize};

/// One chart. Build it from a lab's runs (a pure function), check it with [`Chart::validate`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Chart {
    /// Part of the file name (`results/<lab>-<id>.svg`); unique within a lab.
    pub id: String,
    pub title: Words,
    pub x: Axis,
    pub y: Axis,
    pub series: Vec<Series>,
    /// Dashed reference lines: a capacity ("2 cores"), a bound, the end of a flood.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub marks: Vec<Mark>,
    /// One line under the chart: where the numbers come from (runs, time scale).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<Words>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Axis {
    pub label: Words,
    /// Printed after the axis label and in the table header (`ms`, `events/s`, `%`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub unit: String,
    pub scale: Scale,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scale {
    Linear,
    Log2,
    Log10,
    /// Named positions: a point's coordinate on this axis is the category's index (0, 1, …).
    Categories(Vec<Words>),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Series {
    pub name: Words,
    pub style: Style,
    pub points: Vec<(f64, f64)>,
    /// Per point, the (low, high) ends of a whisker on y: min/max over runs, or a 95 % interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub err: Option<Vec<(f64, f64)>>,
    /// Where some runs have no value to plot at all (a job never served): drawn as a mark of
    /// its own at the top of the plot, never as a bar or a point of some size.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unmeasured: Vec<Unmeasured>,
}

/// At `x`, runs with no value of the series, and why: `never served (C1 died): 2 of 2 runs`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Unmeasured {
    pub x: f64,
    pub label: Words,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Style {
    /// Points joined by straight lines.
    Line,
    /// A staircase: for cumulative counts and distributions.
    Step,
    /// Filled circles: measured values.
    Points,
    /// Open circles: planned or published values beside measured ones.
    HollowPoints,
    /// Bars from the axis; bars of several series on a category axis stand side by side.
    Bars,
}

/// A dashed reference line across the plot at `at` on one axis.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Mark {
    pub label: Words,
    #[serde(default)]
    pub axis: MarkAxis,
    pub at: f64,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MarkAxis {
    /// A vertical line at x = `at`.
    X,
    /// A horizontal line at y = `at`.
    #[default]
    Y,
}

/// A chart whose data does not fit its axes.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum ChartError {
    #[error("chart {chart}: series {series:?} has {points} points but {whiskers} whiskers")]
    Whiskers { chart: String, series: String, points: usize, whiskers: usize },
    #[error("chart {chart}: series {series:?} has a value that is not a finite number")]
    NotFinite { chart: String, series: String },
    #[error("chart {chart}: a logarithmic axis needs values above 0; series {series:?} has {value}")]
    NotPositive { chart: String, series: String, value: f64 },
    #[error("chart {chart}: series {series:?} has {value} on a category axis of {categories} (use 0..{categories})")]
    NotACategory { chart: String, series: String, value: f64, categories: usize },
}

impl Chart {
    /// Every series fits its axes: one whisker per point, finite values, positive values on
    /// logarithmic axes, category indices on category axes.
    pub fn validate(&self) -> Result<(), ChartError> {
        for s in &self.series {
            let name = || s.name.en.clone();
            if let Some(err) = &s.err {
                if err.len() != s.points.len() {
                    let (points, whiskers) = (s.points.len(), err.len());
                    return Err(ChartError::Whiskers { chart: self.id.clone(), series: name(), points, whiskers });
                }
            }
            let whiskers = s.err.iter().flatten().flat_map(|&(lo, hi)| [lo, hi]);
            let ys: Vec<f64> = s.points.iter().map(|p| p.1).chain(whiskers).collect();
            let xs: Vec<f64> = s.points.iter().map(|p| p.0).collect();
            if xs.iter().chain(&ys).any(|v| !v.is_finite()) {
                return Err(ChartError::NotFinite { chart: self.id.clone(), series: name() });
            }
            for (axis, values) in [(&self.x, xs), (&self.y, ys)] {
                if let Some(value) = values.into_iter().find(|v| !axis.scale.admits(*v)) {
                    return Err(match &axis.scale {
                        Scale::Categories(c) => ChartError::NotACategory {
                            chart: self.id.clone(),
                            series: name(),
                            value,
                            categories: c.len(),
                        },
                        _ => ChartError::NotPositive { chart: self.id.clone(), series: name(), value },
                    });
                }
            }
        }
        Ok(())
    }
}

impl Scale {
    /// Whether `value` can be placed on an axis of this scale.
    pub fn admits(&self, value: f64) -> bool {
        match self {
            Scale::Linear => true,
            Scale::Log2 | Scale::Log10 => value > 0.0,
            Scale::Categories(c) => value.fract() == 0.0 && value >= 0.0 && value < c.len() as f64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(scale: Scale, points: Vec<(f64, f64)>, err: Option<Vec<(f64, f64)>>) -> Chart {
        Chart {
            id: "c".into(),
            title: Words::new("t", "t"),
            x: Axis { label: Words::new("x", "x"), unit: String::new(), scale },
            y: Axis { label: Words::new("y", "y"), unit: "%".into(), scale: Scale::Linear },
            series: vec![Series {
                name: Words::new("s", "s"),
                style: Style::Bars,
                points,
                err,
                unmeasured: Vec::new(),
            }],
            marks: vec![],
            note: None,
        }
    }

    #[test]
    fn whiskers_must_match_points() {
        let c = chart(Scale::Linear, vec![(1.0, 2.0), (2.0, 3.0)], Some(vec![(1.0, 3.0)]));
        assert!(matches!(c.validate(), Err(ChartError::Whiskers { points: 2, whiskers: 1, .. })));
        let c = chart(Scale::Linear, vec![(1.0, 2.0)], Some(vec![(1.0, 3.0)]));
        assert_eq!(c.validate(), Ok(()));
    }

    #[test]
    fn log_axes_need_positive_values_and_categories_need_indices() {
        let c = chart(Scale::Log10, vec![(0.0, 1.0)], None);
        assert!(matches!(c.validate(), Err(ChartError::NotPositive { .. })));
        let two = Scale::Categories(vec![Words::new("a", "a"), Words::new("b", "b")]);
        assert_eq!(chart(two.clone(), vec![(0.0, 1.0), (1.0, 5.0)], None).validate(), Ok(()));
        let err = chart(two.clone(), vec![(2.0, 1.0)], None).validate().unwrap_err();
        assert!(err.to_string().contains("use 0..2"), "{err}");
        assert!(chart(two, vec![(0.5, 1.0)], None).validate().is_err());
        assert!(matches!(
            chart(Scale::Linear, vec![(f64::NAN, 1.0)], None).validate(),
            Err(ChartError::NotFinite { .. })
        ));
    }

    #[test]
    fn json_names_the_scale_and_style() {
        let c = chart(Scale::Categories(vec![Words::new("plain", "plain")]), vec![(0.0, 704.0)], None);
        let json = serde_json::to_string(&c).unwrap();
        assert!(json.contains(r#""scale":{"categories":[{"en":"plain","vi":"plain"}]}"#), "{json}");
        assert!(json.contains(r#""style":"bars""#), "{json}");
        assert_eq!(serde_json::from_str::<Chart>(&json).unwrap(), c);
    }
}
