"""Discrete Fourier transforms of `np.fft`: each a linear map, whose transpose is another transform."""
