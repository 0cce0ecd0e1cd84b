//! Line and scatter charts, linear or logarithmic on either axis, written as SVG and PNG.
//!
//! XUNET's Figures 3 and 4 are log-log plots of minimum RTT against packet size; Figures 5-10
//! are linear plots against the number of processes. [`lines`] draws both kinds.
//!
//! PNG rendering rasterises text itself, so it needs a font file. We vendor DejaVu Sans
//! (`assets/DejaVuSans.ttf`, licence in `assets/LICENSE`) and register it with plotters'
//! `ab_glyph` backend, so a chart looks the same on every machine and needs no fontconfig.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};

use crate::units::{format_si, format_sig};

/// The vendored font.
static DEJAVU_SANS: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");
/// The family name we register it under.
const FONT: &str = "sans-serif";
/// Chart size in pixels (PNG) or user units (SVG).
const SIZE: (u32, u32) = (960, 640);

const COLORS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

/// How a series is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SeriesStyle {
    /// A polyline through the points, in the given order.
    Line,
    /// Markers only (scatter).
    Points,
    /// Both.
    LinePoints,
}

/// One named series of (x, y) points.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// The points.
    pub points: Vec<(f64, f64)>,
    /// How to draw them.
    pub style: SeriesStyle,
}

impl Series {
    /// A series drawn as a line with markers.
    pub fn new(name: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Series {
            name: name.into(),
            points,
            style: SeriesStyle::LinePoints,
        }
    }

    /// The same series with another style.
    pub fn with_style(mut self, style: SeriesStyle) -> Self {
        self.style = style;
        self
    }
}

/// The two files written.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PlotFiles {
    /// `<stem>.svg`.
    pub svg: PathBuf,
    /// `<stem>.png`.
    pub png: PathBuf,
}

/// Why a chart could not be drawn.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlotError {
    /// No point is drawable (none at all, or none positive on a log axis).
    #[error("nothing to plot in `{0}` (no finite points, or none positive on a log axis)")]
    NoData(String),
    /// The vendored font did not load.
    #[error("cannot load the vendored DejaVu Sans font")]
    Font,
    /// The plotting library failed (usually writing the file).
    #[error("drawing {path}: {message}")]
    Draw {
        /// The file being drawn.
        path: PathBuf,
        /// plotters' message.
        message: String,
    },
}

/// Draws `series` into `<path_stem>.svg` and `<path_stem>.png`.
///
/// Points that cannot be shown are skipped: non-finite ones, and non-positive ones on a log
/// axis. Each axis range is the data's, with a small margin.
///
/// # Errors
/// [`PlotError::NoData`] when nothing is drawable, [`PlotError::Font`], [`PlotError::Draw`].
pub fn lines(
    path_stem: impl AsRef<Path>,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
    log_x: bool,
    log_y: bool,
) -> Result<PlotFiles, PlotError> {
    ensure_font()?;
    let stem = path_stem.as_ref();
    let shown: Vec<Series> = series
        .iter()
        .map(|s| Series {
            points: s
                .points
                .iter()
                .copied()
                .filter(|&(x, y)| drawable(x, log_x) && drawable(y, log_y))
                .collect(),
            ..s.clone()
        })
        .collect();
    let all: Vec<(f64, f64)> = shown
        .iter()
        .flat_map(|s| s.points.iter().copied())
        .collect();
    let xs = axis_range(all.iter().map(|p| p.0), log_x)
        .ok_or_else(|| PlotError::NoData(title.to_string()))?;
    let ys = axis_range(all.iter().map(|p| p.1), log_y)
        .ok_or_else(|| PlotError::NoData(title.to_string()))?;
    let chart = Chart {
        title,
        x_label,
        y_label,
        series: &shown,
        xs,
        ys,
        log_x,
        log_y,
    };

    let svg = with_extension(stem, "svg");
    let png = with_extension(stem, "png");
    let draw_err = |path: &Path| {
        let path = path.to_path_buf();
        move |message: String| PlotError::Draw { path, message }
    };
    chart
        .render(SVGBackend::new(&svg, SIZE).into_drawing_area())
        .map_err(draw_err(&svg))?;
    chart
        .render(BitMapBackend::new(&png, SIZE).into_drawing_area())
        .map_err(draw_err(&png))?;
    Ok(PlotFiles { svg, png })
}

fn with_extension(stem: &Path, ext: &str) -> PathBuf {
    // Append rather than replace, so a stem like "rtt-1.5ms" keeps its dot.
    let mut s = stem.as_os_str().to_os_string();
    s.push(".");
    s.push(ext);
    PathBuf::from(s)
}

fn ensure_font() -> Result<(), PlotError> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok =
        *REGISTERED.get_or_init(|| register_font(FONT, FontStyle::Normal, DEJAVU_SANS).is_ok());
    if ok {
        Ok(())
    } else {
        Err(PlotError::Font)
    }
}

fn drawable(v: f64, log: bool) -> bool {
    v.is_finite() && (!log || v > 0.0)
}

/// The data's range with a margin: 5 % of the span on a linear axis, a factor of 1.25 on a
/// log axis; a single value gets a range around it.
fn axis_range(values: impl Iterator<Item = f64>, log: bool) -> Option<Range<f64>> {
    let (lo, hi) = values.fold(None, |acc: Option<(f64, f64)>, v| match acc {
        None => Some((v, v)),
        Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
    })?;
    Some(if log {
        let (lo, hi) = if hi / lo < 1.01 {
            (lo / 2.0, hi * 2.0)
        } else {
            (lo, hi)
        };
        (lo / 1.25)..(hi * 1.25)
    } else {
        let span = hi - lo;
        let pad = if span > 0.0 {
            span * 0.05
        } else {
            lo.abs().max(1.0) * 0.5
        };
        (lo - pad)..(hi + pad)
    })
}

/// A short tick label: SI prefixes from 10^4 up ("10.0 G"), exponents below 0.01, and
/// otherwise about four significant digits without trailing zeros ("1000", "2.5").
fn axis_label(v: f64) -> String {
    let a = v.abs();
    if a >= 1e4 {
        format_si(v).trim_end().to_string()
    } else if a != 0.0 && a < 1e-2 {
        format!("{v:.0e}")
    } else {
        let s = format_sig(v);
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    }
}

struct Chart<'a> {
    title: &'a str,
    x_label: &'a str,
    y_label: &'a str,
    series: &'a [Series],
    xs: Range<f64>,
    ys: Range<f64>,
    log_x: bool,
    log_y: bool,
}

/// Draws one chart on `$root` with x and y coordinate specs `$x`, `$y`. A macro rather than a
/// generic function, because linear and log axes are different types in plotters and the
/// trait bounds to abstract over both are longer than this.
macro_rules! draw_chart {
    ($self:ident, $root:ident, $x:expr, $y:expr) => {{
        let mut chart = ChartBuilder::on(&$root)
            .caption($self.title, (FONT, 24))
            .margin(16)
            .x_label_area_size(48)
            .y_label_area_size(72)
            .build_cartesian_2d($x, $y)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .x_desc($self.x_label)
            .y_desc($self.y_label)
            .label_style((FONT, 14))
            .x_label_formatter(&|v: &f64| axis_label(*v))
            .y_label_formatter(&|v: &f64| axis_label(*v))
            .axis_desc_style((FONT, 16))
            .draw()
            .map_err(|e| e.to_string())?;
        for (i, s) in $self.series.iter().enumerate() {
            let color = COLORS[i % COLORS.len()];
            let pts = s.points.clone();
            let mut legend_done = false;
            if matches!(s.style, SeriesStyle::Line | SeriesStyle::LinePoints) {
                chart
                    .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
                    .map_err(|e| e.to_string())?
                    .label(s.name.as_str())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                    });
                legend_done = true;
            }
            if matches!(s.style, SeriesStyle::Points | SeriesStyle::LinePoints) {
                let markers = chart
                    .draw_series(pts.iter().map(|&p| Circle::new(p, 4, color.filled())))
                    .map_err(|e| e.to_string())?;
                if !legend_done {
                    markers
                        .label(s.name.as_str())
                        .legend(move |(x, y)| Circle::new((x + 10, y), 4, color.filled()));
                }
            }
        }
        chart
            .configure_series_labels()
            .label_font((FONT, 14))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(|e| e.to_string())?;
    }};
}

impl Chart<'_> {
    fn render<DB: DrawingBackend>(&self, root: DrawingArea<DB, Shift>) -> Result<(), String> {
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let (xs, ys) = (self.xs.clone(), self.ys.clone());
        match (self.log_x, self.log_y) {
            (false, false) => draw_chart!(self, root, xs, ys),
            (true, false) => draw_chart!(self, root, xs.log_scale(), ys),
            (false, true) => draw_chart!(self, root, xs, ys.log_scale()),
            (true, true) => draw_chart!(self, root, xs.log_scale(), ys.log_scale()),
        }
        root.present().map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn size(p: &Path) -> u64 {
        std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)
    }

    #[test]
    fn writes_nonempty_svg_and_png_linear_and_log() {
        let dir = tempfile::tempdir().unwrap();
        let sizes = [1.0, 2.0, 16.0, 17.0, 112.0, 113.0, 1023.0, 1024.0, 1025.0];
        let min: Vec<(f64, f64)> = sizes.iter().map(|&s| (s, 20.0 + 0.01 * s)).collect();
        let mean: Vec<(f64, f64)> = sizes.iter().map(|&s| (s, 25.0 + 0.012 * s)).collect();
        let series = [
            Series::new("min", min),
            Series::new("mean", mean).with_style(SeriesStyle::Points),
        ];
        for (log_x, log_y, name) in [
            (true, true, "loglog"),
            (false, false, "linear"),
            (true, false, "logx"),
        ] {
            let stem = dir.path().join(name);
            let files = lines(
                &stem,
                "RTT vs size",
                "size (bytes)",
                "RTT (µs)",
                &series,
                log_x,
                log_y,
            )
            .expect("plot");
            assert_eq!(files.svg, dir.path().join(format!("{name}.svg")));
            assert!(size(&files.svg) > 1000, "svg too small");
            assert!(size(&files.png) > 1000, "png too small");
            let png = std::fs::read(&files.png).unwrap();
            assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
            let svg = std::fs::read_to_string(&files.svg).unwrap();
            assert!(svg.contains("<svg") && svg.contains("RTT vs size"));
        }
    }

    #[test]
    fn axis_labels_are_short() {
        assert_eq!(axis_label(1e10), "10.0 G");
        assert_eq!(axis_label(1000.0), "1000");
        assert_eq!(axis_label(2.5), "2.5");
        assert_eq!(axis_label(0.0), "0");
        assert_eq!(axis_label(0.001), "1e-3");
    }

    #[test]
    fn single_point_and_bad_points() {
        let dir = tempfile::tempdir().unwrap();
        let one = [Series::new("one", vec![(5.0, 5.0), (-1.0, f64::NAN)])];
        assert!(lines(dir.path().join("one"), "t", "x", "y", &one, true, true).is_ok());
        let none = [Series::new("none", vec![(0.0, 1.0)])];
        assert!(matches!(
            lines(dir.path().join("none"), "t", "x", "y", &none, true, false),
            Err(PlotError::NoData(_))
        ));
    }
}
