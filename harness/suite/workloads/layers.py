"""The layers of reference networks, as data: the shapes at which the ``atlas`` profile measures each
operator family, and the ones the ``default`` profile measures too (``DEFAULT``).

A release of cuDNN changes its heuristics shape by shape, so one shape per family cannot characterise
it: the atlas measures every distinct layer of a network, and the report sums a family's rows up per
release. Adding a network is a table here, not code: the families (``conv``, ``norm``, ``attention``,
``gemm``, ``elementwise``) turn these rows into workloads. Standard library only, like every family's
specs.
"""

from __future__ import annotations

from typing import NamedTuple


class ConvLayer(NamedTuple):
    """One distinct convolution of a network (padding k // 2, square input of ``hw``)."""

    name: str  # unique in its network: its stage and role
    cin: int
    cout: int
    k: int
    stride: int
    hw: int  # input height and width


class Network(NamedTuple):
    key: str  # the short name in workload ids
    title: str
    batch: int  # the batch its layers run at (the default profile's)
    convs: tuple[ConvLayer, ...]
    batchnorms: tuple[tuple[int, int], ...]  # (channels, hw) of each distinct batch norm


def _bottleneck_stage(stage: int, cin: int, width: int, hw: int) -> tuple[ConvLayer, ...]:
    """The distinct convolutions of a ResNet-50 stage (torchvision's v1.5: the stride on the 3x3): its
    first block's reduce, strided 3x3 and downsample, then the expand, reduce and 3x3 of the others."""
    out, s = width * 4, 2
    half = hw // 2
    c = f"c{stage}"
    return (
        ConvLayer(f"{c}_reduce1", cin, width, 1, 1, hw),
        ConvLayer(f"{c}_3x3s2", width, width, 3, s, hw),
        ConvLayer(f"{c}_expand", width, out, 1, 1, half),
        ConvLayer(f"{c}_down", cin, out, 1, s, hw),
        ConvLayer(f"{c}_reduce", out, width, 1, 1, half),
        ConvLayer(f"{c}_3x3", width, width, 3, 1, half),
    )


# ResNet-50 at 224x224: the stem, stage 2 (no stride; its first block's downsample has the expand's
# shape), stages 3-5. The three names without a stage ("7x7s2", "3x3", "1x1") are the suite's older ids
# for those layers, kept so that earlier results still compare.
RESNET50 = Network(
    "r50",
    "ResNet-50",
    32,
    (
        ConvLayer("7x7s2", 3, 64, 7, 2, 224),
        ConvLayer("c2_reduce1", 64, 64, 1, 1, 56),
        ConvLayer("3x3", 64, 64, 3, 1, 56),
        ConvLayer("c2_expand", 64, 256, 1, 1, 56),
        ConvLayer("1x1", 256, 64, 1, 1, 56),
        *_bottleneck_stage(3, 256, 128, 56),
        *_bottleneck_stage(4, 512, 256, 28),
        *_bottleneck_stage(5, 1024, 512, 14),
    ),
    (
        (64, 112),
        (64, 56),
        (256, 56),
        (128, 56),
        (128, 28),
        (512, 28),
        (256, 28),
        (256, 14),
        (1024, 14),
        (512, 14),
        (512, 7),
        (2048, 7),
    ),
)

# U-Net (Ronneberger et al., padded convolutions) at 256x256: large spatial 3x3 convolutions, the
# encoder's two per level and the decoder's first after each concatenation (its second repeats an
# encoder shape).
UNET = Network(
    "unet",
    "U-Net",
    8,
    (
        ConvLayer("e1a", 3, 64, 3, 1, 256),
        ConvLayer("e1b", 64, 64, 3, 1, 256),
        ConvLayer("e2a", 64, 128, 3, 1, 128),
        ConvLayer("e2b", 128, 128, 3, 1, 128),
        ConvLayer("e3a", 128, 256, 3, 1, 64),
        ConvLayer("e3b", 256, 256, 3, 1, 64),
        ConvLayer("e4a", 256, 512, 3, 1, 32),
        ConvLayer("e4b", 512, 512, 3, 1, 32),
        ConvLayer("mid_a", 512, 1024, 3, 1, 16),
        ConvLayer("mid_b", 1024, 1024, 3, 1, 16),
        ConvLayer("d4a", 1024, 512, 3, 1, 32),
        ConvLayer("d3a", 512, 256, 3, 1, 64),
        ConvLayer("d2a", 256, 128, 3, 1, 128),
        ConvLayer("d1a", 128, 64, 3, 1, 256),
    ),
    (),
)

NETWORKS = (RESNET50, UNET)


class Transformer(NamedTuple):
    """A pre-norm transformer block (``models.TransformerBlock``) at the sequence lengths measured."""

    title: str
    batch: int
    d_model: int
    heads: int
    seq_lens: tuple[int, ...]
    # its matrix products: name -> (in features, out features), on batch * seq tokens
    linears: tuple[tuple[str, int, int], ...]


TRANSFORMER = Transformer(
    "transformer block (d 1024, 16 heads)",
    8,
    1024,
    16,
    (1024, 4096),
    (("qkv", 1024, 3072), ("proj", 1024, 1024), ("mlp_up", 1024, 4096), ("mlp_down", 4096, 1024)),
)


class DefaultLayers(NamedTuple):
    """The layers the ``default`` profile measures beside the suite's generic shapes: a convolution in
    every pass in each ``conv_pairs`` dtype and layout (the ways PyTorch users train), the others in
    ``dtypes``."""

    convs: tuple[tuple[str, str], ...]  # (network key, layer name)
    conv_pairs: tuple[tuple[str, str], ...]  # (dtype, layout)
    batchnorms: tuple[tuple[str, int, int], ...]  # (network key, channels, hw)
    pools: tuple[str, ...]  # workload ids
    dtypes: tuple[
        str, ...
    ]  # the transformer block's attention, matrix products and layer norms, norms, pools


# ResNet-50's 3x3 of each deeper stage (its stride-2 first among them), two of its deep 1x1s, and U-Net's
# two largest 3x3s (256x256); the transformer block at both sequence lengths; the largest and smallest
# batch norm of ResNet-50; ResNet-50's head and U-Net's first pooling.
DEFAULT = DefaultLayers(
    convs=(
        ("r50", "c3_3x3s2"),
        ("r50", "c4_3x3"),
        ("r50", "c5_3x3"),
        ("r50", "c4_reduce"),
        ("r50", "c5_expand"),
        ("unet", "e1b"),
        ("unet", "d1a"),
    ),
    conv_pairs=(("fp32_default", "nchw"), ("fp32", "nchw"), ("bf16", "cl")),
    batchnorms=(("r50", 64, 112), ("r50", 2048, 7)),
    pools=("adaptive_avgpool2d_r50_head", "maxpool2d_unet_64x256"),
    dtypes=("bf16",),
)
