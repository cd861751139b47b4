! zcoll from Fortran through the C API (include/zcoll.h) and bind(C): a field compressed and restored
! within its stated bound; an error is a code with a message. Exits with status 1 when anything is wrong.
!
!     zcoll-example-fortran
module zcoll_c
  use, intrinsic :: iso_c_binding
  implicit none
  integer(c_int), parameter :: ZCOLL_SUCCESS = 0, ZCOLL_ERR_ARGUMENT = 1, ZCOLL_ERR_FORMAT = 2
  integer(c_int), parameter :: ZCOLL_FLOAT = 0, ZCOLL_DOUBLE = 1
  interface
    integer(c_int) function zcoll_codec_create(name, error_bound, shape, dims, codec) bind(C)
      import :: c_int, c_char, c_ptr, c_size_t
      character(kind=c_char), dimension(*), intent(in) :: name, error_bound
      type(c_ptr), value :: shape
      integer(c_size_t), value :: dims
      type(c_ptr), intent(out) :: codec
    end function
    subroutine zcoll_codec_free(codec) bind(C)
      import :: c_ptr
      type(c_ptr), value :: codec
    end subroutine
    integer(c_int) function zcoll_compress_bound(codec, type, count, bytes) bind(C)
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: codec
      integer(c_int), value :: type
      integer(c_size_t), value :: count
      integer(c_size_t), intent(out) :: bytes
    end function
    integer(c_int) function zcoll_compress(codec, type, values, count, stream, capacity, written) bind(C)
      import :: c_int, c_ptr, c_size_t, c_double, c_int8_t
      type(c_ptr), value :: codec
      integer(c_int), value :: type
      real(c_double), dimension(*), intent(in) :: values
      integer(c_size_t), value :: count, capacity
      integer(c_int8_t), dimension(*), intent(out) :: stream
      integer(c_size_t), intent(out) :: written
    end function
    integer(c_int) function zcoll_stream_info(stream, bytes, type, count, error_bound) bind(C)
      import :: c_int, c_size_t, c_double, c_int8_t
      integer(c_int8_t), dimension(*), intent(in) :: stream
      integer(c_size_t), value :: bytes
      integer(c_int), intent(out) :: type
      integer(c_size_t), intent(out) :: count
      real(c_double), intent(out) :: error_bound
    end function
    integer(c_int) function zcoll_decompress(stream, bytes, type, values, count) bind(C)
      import :: c_int, c_size_t, c_double, c_int8_t
      integer(c_int8_t), dimension(*), intent(in) :: stream
      integer(c_size_t), value :: bytes, count
      integer(c_int), value :: type
      real(c_double), dimension(*), intent(out) :: values
    end function
    type(c_ptr) function zcoll_error_message() bind(C)
      import :: c_ptr
    end function
  end interface
contains
  ! zcoll_error_message() as a Fortran string.
  function error_message() result(text)
    character(len=:), allocatable :: text
    character(kind=c_char), pointer :: chars(:)
    integer :: n
    call c_f_pointer(zcoll_error_message(), chars, [4096])
    n = 0
    do while (chars(n + 1) /= c_null_char)
      n = n + 1
    end do
    allocate(character(len=n) :: text)
    text = transfer(chars(1:n), text)
  end function
end module

program zcoll_fortran
  use zcoll_c
  implicit none
  integer(c_size_t), parameter :: n = 50000
  real(c_double), allocatable :: field(:), restored(:)
  integer(c_int8_t), allocatable :: stream(:)
  type(c_ptr) :: codec
  integer(c_size_t) :: capacity, written, count
  integer(c_int) :: type, status
  real(c_double) :: bound, worst
  integer :: i

  allocate(field(n), restored(n))
  do i = 1, int(n)
    field(i) = sin(0.002d0 * i) * 100d0 + 0.5d0 * cos(0.03d0 * i)
  end do

  status = zcoll_codec_create("fzlight" // c_null_char, "abs:1e-3" // c_null_char, c_null_ptr, 0_c_size_t, codec)
  if (status /= ZCOLL_SUCCESS) call fail("create: " // error_message())
  if (zcoll_compress_bound(codec, ZCOLL_DOUBLE, n, capacity) /= ZCOLL_SUCCESS) call fail(error_message())
  allocate(stream(capacity))
  if (zcoll_compress(codec, ZCOLL_DOUBLE, field, n, stream, capacity, written) /= ZCOLL_SUCCESS) call fail(error_message())
  if (zcoll_stream_info(stream, written, type, count, bound) /= ZCOLL_SUCCESS) call fail(error_message())
  if (type /= ZCOLL_DOUBLE .or. count /= n .or. bound /= 1d-3) call fail("the stream says another type, count or bound")
  if (zcoll_decompress(stream, written, ZCOLL_DOUBLE, restored, n) /= ZCOLL_SUCCESS) call fail(error_message())
  worst = maxval(abs(restored - field))
  if (worst > bound) call fail("a value outside the stated bound")
  print '(a, i0, a, i0, a, f6.2, a, es10.3, a, es10.3)', 'zcoll-example-fortran: ', n, ' doubles -> ', written, &
    ' bytes (ratio ', real(8 * n) / real(written), '), max error ', worst, ' <= ', bound

  ! A damaged stream is a format error with a message, not a crash.
  stream(40) = not(stream(40))
  status = zcoll_decompress(stream, written / 2, ZCOLL_DOUBLE, restored, n)
  if (status /= ZCOLL_ERR_FORMAT) call fail("a truncated stream was not a format error")
  print '(2a)', 'zcoll-example-fortran: truncated stream -> ', error_message()
  call zcoll_codec_free(codec)
contains
  subroutine fail(what)
    character(len=*), intent(in) :: what
    print '(2a)', 'zcoll-example-fortran: FAILED: ', what
    error stop 1
  end subroutine
end program
