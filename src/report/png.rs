//! Slide-ready pictures: an SVG drawn by resvg into a 1600×900 box (aspect kept, white
//! background) and written as a 64-colour palette PNG, small enough to paste anywhere.
//!
//! The fonts are the system's: DejaVu Sans (fonts-dejavu-core, which `just setup` installs)
//! must be there, or resvg would silently leave every text out.

use resvg::{tiny_skia, usvg};

/// The box a picture is fitted into: a 16:9 slide at a size that stays sharp on a projector.
pub const BOX: (f32, f32) = (1600.0, 900.0);
/// Palette size: anti-aliased text on flat colours needs few; 64 keeps files ~35 % smaller than 256.
const COLOURS: i32 = 64;
/// NeuQuant sampling factor: 1 looks at every pixel; 30 is ~10× faster and as good on charts.
const SAMPLE: i32 = 30;
/// The family every ordlab SVG names first that has Vietnamese glyphs.
pub const FONT: &str = "DejaVu Sans";

#[derive(Debug, thiserror::Error)]
pub enum PngError {
    #[error(
        "no {FONT} font for the PNG pictures (text would be left out): install fonts-dejavu-core (`just setup` does)"
    )]
    NoFont,
    #[error("SVG not readable: {0}")]
    Svg(String),
    #[error("PNG not written: {0}")]
    Encode(String),
    #[error("{path}: {detail}")]
    File { path: String, detail: String },
}

/// Draws SVGs with the system fonts, loaded once.
pub struct PngWriter {
    options: usvg::Options<'static>,
}

impl PngWriter {
    pub fn new() -> Result<PngWriter, PngError> {
        let mut options = usvg::Options::default();
        options.fontdb_mut().load_system_fonts();
        Self::with_options(options)
    }

    fn with_options(mut options: usvg::Options<'static>) -> Result<PngWriter, PngError> {
        let query = usvg::fontdb::Query { families: &[usvg::fontdb::Family::Name(FONT)], ..Default::default() };
        if options.fontdb.query(&query).is_none() {
            return Err(PngError::NoFont);
        }
        options.font_family = FONT.to_string();
        Ok(PngWriter { options })
    }

    /// The SVG as PNG bytes, fitted into [`BOX`].
    pub fn render(&self, svg: &str) -> Result<Vec<u8>, PngError> {
        let tree = usvg::Tree::from_str(svg, &self.options).map_err(|e| PngError::Svg(e.to_string()))?;
        let size = tree.size();
        let scale = (BOX.0 / size.width()).min(BOX.1 / size.height());
        let (w, h) = ((size.width() * scale).round() as u32, (size.height() * scale).round() as u32);
        let mut pixmap =
            tiny_skia::Pixmap::new(w.max(1), h.max(1)).ok_or_else(|| PngError::Svg("empty picture".into()))?;
        pixmap.fill(tiny_skia::Color::WHITE);
        resvg::render(&tree, tiny_skia::Transform::from_scale(scale, scale), &mut pixmap.as_mut());
        encode_palette(pixmap.data(), w.max(1), h.max(1))
    }
}

/// Opaque RGBA pixels as an 8-bit palette PNG.
fn encode_palette(rgba: &[u8], w: u32, h: u32) -> Result<Vec<u8>, PngError> {
    let quant = color_quant::NeuQuant::new(SAMPLE, COLOURS as usize, rgba);
    let indices: Vec<u8> = rgba.chunks_exact(4).map(|p| quant.index_of(p) as u8).collect();
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, w, h);
    encoder.set_color(png::ColorType::Indexed);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.set_palette(quant.color_map_rgb());
    encoder.set_compression(png::Compression::High);
    let mut writer = encoder.write_header().map_err(|e| PngError::Encode(e.to_string()))?;
    writer.write_image_data(&indices).map_err(|e| PngError::Encode(e.to_string()))?;
    writer.finish().map_err(|e| PngError::Encode(e.to_string()))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SVG: &str = r##"<svg xmlns="http://www.w3.org/2000/svg" width="320" height="90" viewBox="0 0 320 90" font-family="DejaVu Sans">
<rect x="10" y="10" width="100" height="30" fill="#4c78a8"/><text x="10" y="80" font-size="30">Đơn hàng đã thanh toán</text></svg>"##;

    fn decode(png_bytes: &[u8]) -> (u32, u32, Vec<u8>) {
        let mut reader = png::Decoder::new(std::io::Cursor::new(png_bytes)).read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut buf).unwrap();
        let palette = reader.info().palette.as_ref().map(|p| p.to_vec()).unwrap();
        let rgb: Vec<u8> = buf[..info.buffer_size()]
            .iter()
            .flat_map(|&i| palette[i as usize * 3..i as usize * 3 + 3].to_vec())
            .collect();
        (info.width, info.height, rgb)
    }

    #[test]
    fn fits_the_slide_box_and_draws_text() {
        let Ok(writer) = PngWriter::new() else { panic!("{}", PngError::NoFont) };
        let (w, h, rgb) = decode(&writer.render(SVG).unwrap());
        assert_eq!((w, h), (1600, 450), "320×90 scaled by 5 to the box's width");
        // Text is dark: pixels below the bar (y > 45 % of the height) that are near black.
        let dark_text =
            rgb.chunks(3).skip(w as usize * (h as usize / 2)).filter(|p| p.iter().all(|c| *c < 100)).count();
        assert!(dark_text > 2000, "text drawn: {dark_text} dark pixels");
    }

    #[test]
    fn without_the_font_it_says_what_to_install() {
        let err = PngWriter::with_options(usvg::Options::default()).err().expect("an empty font database is refused");
        assert!(err.to_string().contains("fonts-dejavu-core"), "{err}");
    }
}
