"""BibTeX entries that several metric scripts cite (evaluate's ``MetricInfo.citation``): Valor,
RAGAS, G-Eval (summary_coherence, g_eval) and Zheng et al.'s LLM-as-a-judge study, which measured
position bias (pairwise), and DeepEval (the conversation metrics)."""

VALOR = """\
@misc{valor_lite,
  title={Valor: text generation metrics (valor-lite)},
  author={Striveworks},
  howpublished={\\url{https://github.com/Striveworks/valor}},
  year={2024}
}
"""

RAGAS = """\
@article{es2023ragas,
  title={RAGAS: Automated Evaluation of Retrieval Augmented Generation},
  author={Es, Shahul and James, Jithin and Espinosa-Anke, Luis and Schockaert, Steven},
  journal={arXiv preprint arXiv:2309.15217},
  year={2023}
}
"""

GEVAL = """\
@article{liu2023geval,
  title={G-Eval: NLG Evaluation using GPT-4 with Better Human Alignment},
  author={Liu, Yang and Iter, Dan and Xu, Yichong and Wang, Shuohang and Xu, Ruochen
          and Zhu, Chenguang},
  journal={arXiv preprint arXiv:2303.16634},
  year={2023}
}
"""

ZHENG_MT_BENCH = """\
@inproceedings{zheng2023judging,
  title={Judging LLM-as-a-Judge with MT-Bench and Chatbot Arena},
  author={Zheng, Lianmin and Chiang, Wei-Lin and Sheng, Ying and Zhuang, Siyuan and Wu, Zhanghao
          and Zhuang, Yonghao and Lin, Zi and Li, Zhuohan and Li, Dacheng and Xing, Eric P.
          and Zhang, Hao and Gonzalez, Joseph E. and Stoica, Ion},
  booktitle={Advances in Neural Information Processing Systems (Datasets and Benchmarks Track)},
  year={2023}
}
"""

DEEPEVAL = """\
@misc{deepeval,
  title={DeepEval: the LLM evaluation framework},
  author={{Confident AI}},
  howpublished={\\url{https://github.com/confident-ai/deepeval}},
  year={2024}
}
"""
