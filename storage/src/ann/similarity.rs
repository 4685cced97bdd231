//! How a vector index compares vectors: Cassandra's three similarity functions as scores
//! (what `similarity_*` and ANN results use) and as graph distances (what the HNSW walks).

use crate::row::{ColumnValue, Row};

/// A vector index's `similarity_function` (Cassandra 5.0's `VectorSimilarityFunction`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
pub enum Similarity {
    /// `(1 + cos(a, b)) / 2`; the default.
    #[default]
    Cosine,
    /// `1 / (1 + |a - b|²)`.
    Euclidean,
    /// `(1 + a·b) / 2`, meant for normalized vectors.
    DotProduct,
}

impl Similarity {
    /// Parses an index's `similarity_function` option (any case).
    pub fn from_option(text: &str) -> Option<Similarity> {
        match text.to_ascii_lowercase().as_str() {
            "cosine" => Some(Similarity::Cosine),
            "euclidean" => Some(Similarity::Euclidean),
            "dot_product" => Some(Similarity::DotProduct),
            _ => None,
        }
    }

    /// The option's value as Cassandra stores it (`COSINE`, `EUCLIDEAN`, `DOT_PRODUCT`).
    pub fn name(self) -> &'static str {
        match self {
            Similarity::Cosine => "COSINE",
            Similarity::Euclidean => "EUCLIDEAN",
            Similarity::DotProduct => "DOT_PRODUCT",
        }
    }

    /// The similarity score of two vectors of one length, higher is nearer (Cassandra's
    /// `similarity_cosine` / `similarity_euclidean` / `similarity_dot_product`). A cosine with
    /// a zero vector is NaN, as Cassandra's.
    pub fn score(self, a: &[f32], b: &[f32]) -> f32 {
        match self {
            Similarity::Cosine => {
                let (dot, na, nb) = (dot(a, b), dot(a, a), dot(b, b));
                let cos = (f64::from(dot) / (f64::from(na) * f64::from(nb)).sqrt()) as f32;
                (1.0 + cos) / 2.0
            }
            Similarity::Euclidean => 1.0 / (1.0 + squared_distance(a, b)),
            Similarity::DotProduct => (1.0 + dot(a, b)) / 2.0,
        }
    }

    /// The distance the graph library measures (usearch's `Cos`, `L2sq` and `IP`):
    /// `1 - cos`, the squared euclidean distance, `1 - a·b`. Smaller when
    /// [`Similarity::score`] is higher; never NaN (a zero vector's cosine is 1).
    pub(crate) fn distance(self, a: &[f32], b: &[f32]) -> f32 {
        let d = match self {
            Similarity::Cosine => 2.0 - 2.0 * self.score(a, b),
            Similarity::Euclidean => squared_distance(a, b),
            Similarity::DotProduct => 1.0 - dot(a, b),
        };
        if d.is_nan() {
            1.0
        } else {
            d
        }
    }

    /// Whether the graph can hold `v`: finite elements, and for cosine a length above zero
    /// (Cassandra refuses such vectors in a cosine index).
    pub fn indexable(self, v: &[f32]) -> bool {
        v.iter().all(|x| x.is_finite())
            && (self != Similarity::Cosine || v.iter().any(|x| *x != 0.0))
    }
}

/// Lanes summed apart: a float sum in one accumulator must run in order, eight let the
/// compiler use SIMD (the graph spends most of its time here).
const LANES: usize = 8;

/// `Σ f(aᵢ, bᵢ)` over eight accumulators.
#[inline]
fn lanes_sum(a: &[f32], b: &[f32], f: impl Fn(f32, f32) -> f32) -> f32 {
    let mut acc = [0f32; LANES];
    let (ca, cb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let rest: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(p, q)| f(*p, *q))
        .sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..LANES {
            acc[i] += f(x[i], y[i]);
        }
    }
    acc.iter().sum::<f32>() + rest
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    lanes_sum(a, b, |p, q| p * q)
}

fn squared_distance(a: &[f32], b: &[f32]) -> f32 {
    lanes_sum(a, b, |p, q| (p - q) * (p - q))
}

/// One vector index of a table, as storage keeps it: which column, how long its vectors
/// are, how they compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct VectorIndexSpec {
    /// The indexed column's id (a `vector<float, n>` regular column).
    pub column: u32,
    /// `n`.
    pub dimension: usize,
    /// The index's similarity function.
    pub similarity: Similarity,
}

impl VectorIndexSpec {
    /// The score of `row`'s vector against `query`; None when the row has no vector of the
    /// index's length, or the score is NaN (a cosine with a zero vector).
    pub fn score_row(&self, query: &[f32], row: &Row) -> Option<f32> {
        let Some(ColumnValue::Simple(cell)) = row.cells.get(&self.column) else {
            return None;
        };
        let v = decode_vector(&cell.value, self.dimension)?;
        Some(self.similarity.score(query, &v)).filter(|s| !s.is_nan())
    }
}

/// A stored `vector<float, n>` value: `n` big-endian floats. None for another length.
pub fn decode_vector(bytes: &[u8], dimension: usize) -> Option<Vec<f32>> {
    if bytes.len() != dimension.checked_mul(4)? {
        return None;
    }
    Some(
        bytes
            .chunks_exact(4)
            .map(|c| f32::from_be_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_are_cassandras() {
        let (a, b) = ([1.0f32, 0.0], [0.0f32, 1.0]);
        assert!((Similarity::Cosine.score(&a, &b) - 0.5).abs() < 1e-6);
        assert!((Similarity::Cosine.score(&a, &a) - 1.0).abs() < 1e-6);
        assert!((Similarity::Euclidean.score(&a, &b) - 1.0 / 3.0).abs() < 1e-6);
        assert!((Similarity::DotProduct.score(&a, &b) - 0.5).abs() < 1e-6);
        assert!(Similarity::Cosine.score(&a, &[0.0, 0.0]).is_nan());
    }

    #[test]
    fn distances_order_as_scores_and_stay_non_negative() {
        let q = [0.6f32, 0.8];
        let near = [0.8f32, 0.6];
        let far = [-0.6f32, 0.8];
        for s in [
            Similarity::Cosine,
            Similarity::Euclidean,
            Similarity::DotProduct,
        ] {
            assert!(s.score(&q, &near) > s.score(&q, &far), "{s:?}");
            assert!(s.distance(&q, &near) < s.distance(&q, &far), "{s:?}");
            assert!(!s.distance(&q, &[0.0, 0.0]).is_nan());
        }
    }

    #[test]
    fn vectors_decode_from_big_endian_floats() {
        let bytes: Vec<u8> = [1.5f32, -2.0]
            .iter()
            .flat_map(|f| f.to_be_bytes())
            .collect();
        assert_eq!(decode_vector(&bytes, 2), Some(vec![1.5, -2.0]));
        assert_eq!(decode_vector(&bytes, 3), None);
        assert_eq!(decode_vector(&bytes[..7], 2), None);
        assert!(Similarity::Cosine.indexable(&[1.0, 0.0]));
        assert!(!Similarity::Cosine.indexable(&[0.0, 0.0]));
        assert!(Similarity::Euclidean.indexable(&[0.0, 0.0]));
        assert!(!Similarity::Euclidean.indexable(&[f32::NAN, 0.0]));
    }
}
