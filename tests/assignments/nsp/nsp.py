"""Reference solution of the assignment: sentence-pair pretraining data (for the tests and the teacher).

Use Python and torch (not minibert). Grade it with: minibert assignment grade .
"""

import torch.nn.functional as F

IS_NEXT, NOT_NEXT = 0, 1  # Google's and Hugging Face's labels (d2l uses the opposite)


def nsp_pairs(documents, max_len, rng):
    """BERT's next-sentence-prediction pairs -> [(tokens_a, tokens_b, label), ...].

    documents: a list of documents, each a list of sentences, each a list of token ids; rng: a
    random.Random (use it for every random choice). For every sentence but the last of each
    document, in order: A is that sentence; B is the next sentence (label IS_NEXT) or, with
    probability 0.5, a random sentence of another document (label NOT_NEXT). Truncate the longer
    segment, one token at a time, until [CLS] A [SEP] B [SEP] fits max_len.
    """
    pairs = []
    for d, document in enumerate(documents):
        for i in range(len(document) - 1):
            a = list(document[i])
            if rng.random() < 0.5:
                b, label = list(document[i + 1]), IS_NEXT
            else:
                other = rng.choice([e for e in range(len(documents)) if e != d])
                b, label = list(rng.choice(documents[other])), NOT_NEXT
            while len(a) + len(b) + 3 > max_len:
                (a if len(a) > len(b) else b).pop()
            pairs.append((a, b, label))
    return pairs


def sop_pairs(documents, rng):
    """ALBERT's sentence-order pairs -> [(tokens_a, tokens_b, label), ...].

    For every sentence but the last of each document, in order: the sentence and the next one, in
    order (label 0) or, with probability 0.5, swapped (label 1). Both come from one document.
    """
    pairs = []
    for document in documents:
        for i in range(len(document) - 1):
            first, second = list(document[i]), list(document[i + 1])
            if rng.random() < 0.5:
                pairs.append((second, first, 1))
            else:
                pairs.append((first, second, 0))
    return pairs


def nsp_loss(nsp_logits, labels):
    """nsp_logits (batch, 2), labels (batch,) -> the mean cross-entropy (a 0-dim tensor).

    Every pair counts, whichever its label.
    """
    return F.cross_entropy(nsp_logits, labels)
