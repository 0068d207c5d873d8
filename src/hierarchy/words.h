/* aim_words: words in the generator matrices of a moment hierarchy
 * (theory/model.md sec. 6). A word is a string of letters, one per matrix
 * (e.g. 'S' the student, 'T' the teacher); its moment is the normalised
 * trace Tr(L1 L2 ... Ln)/d of the product. Moments do not change under
 * cyclic rotation of the word nor under transposition (reverse the word
 * and replace every letter by the letter of its transpose), so each
 * class of words has one canonical representative: the smallest, in the
 * alphabet's letter order, of all rotations of the word and of its
 * transpose. The order of a word is its length (theory/tied.md). */
#ifndef AIM_WORDS_H
#define AIM_WORDS_H

#define AIM_WORD_MAX 24     /* longest word, in letters */
#define AIM_ALPHABET_MAX 15 /* most letters in an alphabet */

/* Letters (printable, distinct) in their canonical order and, for each,
 * the letter of its transpose (itself for a symmetric matrix). Both are
 * NUL-terminated strings of the same length, e.g. {"ST", "ST"} (tied) or
 * {"ABKk", "ABkK"}. */
typedef struct {
    char letters[AIM_ALPHABET_MAX + 1];
    char transpose[AIM_ALPHABET_MAX + 1];
} aim_alphabet;

/* Canonical representative of w's class into out (room for
 * AIM_WORD_MAX + 1 chars). Returns 0, or -1 when w is longer than
 * AIM_WORD_MAX or has a letter not in the alphabet. "" is canonical. */
int aim_word_canonical(const aim_alphabet *ab, const char *w, char *out);

/* The transposed word (reversed, every letter transposed), not
 * canonicalised. Returns 0 or -1 as above. */
int aim_word_transpose(const aim_alphabet *ab, const char *w, char *out);

/* Number of classes of words of length len (canonical words), counted
 * without listing them (Burnside's lemma over the rotations and the
 * transposition), so that the size of a word set can be known before it
 * is built. Exact while below 2^53; -1 for an invalid alphabet or len < 0. */
double aim_words_classes(const aim_alphabet *ab, int len);

/* Every canonical word of length 0 .. max_len, ordered by length, then
 * lexicographically in the letter order; index 0 is the empty word
 * (moment Tr(I)/d = 1). */
typedef struct aim_wordset aim_wordset;

/* NULL on allocation failure or bad arguments (max_len outside
 * 0..AIM_WORD_MAX, invalid alphabet). */
aim_wordset *aim_wordset_create(const aim_alphabet *ab, int max_len);
void aim_wordset_free(aim_wordset *ws);

const aim_alphabet *aim_wordset_alphabet(const aim_wordset *ws);
int aim_wordset_max_len(const aim_wordset *ws);
int aim_wordset_count(const aim_wordset *ws);
/* Words of length len are the indices first(len) .. first(len + 1) - 1;
 * first(max_len + 1) == count. */
int aim_wordset_first(const aim_wordset *ws, int len);
const char *aim_wordset_word(const aim_wordset *ws, int i);
int aim_wordset_len(const aim_wordset *ws, int i);
/* Index of the class of w (any representative, canonicalised here), or
 * -1 when w is longer than max_len or not a word of the alphabet. */
int aim_wordset_find(const aim_wordset *ws, const char *w);

/* Moments Tr(w)/d of every word of length <= max_len (<= the set's) from
 * dense d x d row-major matrices, matrices[k] for letter k of the
 * alphabet; moments[i] for word i (moments[0] = 1). Products of shared
 * prefixes are computed once (CBLAS dgemm); each moment is then one
 * trace of a product, O(d^2). Returns 0, or -1 on allocation failure. */
int aim_words_measure(const aim_wordset *ws, int max_len,
                      const double *const *matrices, int d, double *moments);

/* The dense d x d matrices of the letters of a hierarchy's alphabet, for
 * aim_words_measure: S or K the student matrix S, k its transpose, T the
 * teacher St, t its transpose, A = U U^T and B = V V^T from the untied
 * factors (d x p row-major; NULL for other students). mats[k] is letter
 * k's matrix: S and St themselves, the others in buf (room for 4 d x d).
 * Returns 0, or -1 for a letter that cannot be formed. */
int aim_words_letters(const aim_alphabet *ab, const double *S, const double *St,
                      const double *U, const double *V, int d, int p, double *buf,
                      const double **mats);

#endif
