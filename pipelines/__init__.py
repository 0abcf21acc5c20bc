"""What uses the model runtime (``attnscope.models``): explainers, faithfulness evaluation, data sets and
data-set runs, measure-view layers, probes, training and fine-tuning."""
